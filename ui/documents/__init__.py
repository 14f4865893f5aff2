"""Documents page renderers: upload, index, conflicts, the document table."""
