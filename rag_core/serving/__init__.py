"""Serving state, in one place: what the app serves and the background work that changes it.

``activestate``  the active configuration and the index serving it (one pointer for every session)
``configstore``  named configurations saved in the data directory or on the Chroma server
``reindex``      re-indexing beside the serving index, then one swap
``jobs``         the background job queue per data directory (``jobstatus``: what a job is and says)
``ingest_job``   the ingest job: documents indexed in batches, each file's status
``tuning_jobs``  a tuning study as a background job
``home_demo``    the Home demo's step-3 question, chosen by a background job asking both sides every question
``throughput``   ETAs from a job's measured pace; an ingest's cost from this machine's measured throughput
"""
