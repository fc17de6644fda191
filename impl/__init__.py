"""The production versions under test: the cached GPT dataset and the window-normalised diffusion loss."""
