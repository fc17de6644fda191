"""The dataset wing: what judges a GPT dataset target (docs/dataset.md).

The bitwise sample comparison and its aliasing hazards (``compare``), the repository's own dataset
targets (``impl``), megatron-core's ``GPTDataset`` as a target (``megatron``), over documents written
to ``.bin``/``.idx`` files with megatron's own builder (``files``), its builder, blends, splits and index
cache (``megatron_pipeline``) and its mock data (``megatron_mock``), and how fast the dataset bugs are
found (``bench``). It imports only the base (cases, targets, judgement,
strategies) and the safety floor; the report and the table above read its results (docs/design.md,
Layout).
"""
