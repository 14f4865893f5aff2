"""Chunk Explorer renderers: the chunking of a document, the A/B configuration controls, the five views."""
