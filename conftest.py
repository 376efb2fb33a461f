"""pytest root conftest: its folder (the repo root) goes on sys.path, so tests can import shared helpers
as ``from tests.tiny_checkpoint import write_tiny_llama``. (A conftest inside tests/ would instead put
tests/ first on sys.path, where tests/roles would shadow the real ``roles`` package.)"""
