"""``python -m parity``'s commands apart from its argument parsing: the report (``report.py``), the other commands
and their table (``commands.py``), the parser (``arguments.py``), what the CLI prints besides a report
(``output.py``). The entry point itself is :mod:`parity.__main__`."""
