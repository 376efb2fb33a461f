"""One file per model family (what differs from Llama, and how its numbers are read) and their registry."""
