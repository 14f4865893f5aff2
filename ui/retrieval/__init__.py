"""Retrieval Lab renderers: the retrieval knobs, a result, hits for people."""
