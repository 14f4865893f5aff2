"""ETAs from a job's measured pace, and an ingest's cost from this machine's measured throughput."""

from __future__ import annotations

import json

import pytest

from rag_core.config import Settings
from rag_core.embeddings import get_embedder
from rag_core.index import Index
from rag_core.loaders import load_bytes
from rag_core.serving.throughput import (
    LONG_INGEST_S,
    Throughput,
    combine,
    duration_text,
    estimate,
    ingest_estimate,
    load,
    measure,
    pace_anchor,
    record,
    seconds_left,
)


def test_no_eta_before_a_measurement():
    assert seconds_left(0.3, 10.0, 0.0, -1.0) is None  # never moved
    assert seconds_left(0.3, 10.0, 0.3, 5.0) is None  # no progress since the pace started
    assert seconds_left(0.31, 5.5, 0.3, 5.0) is None  # half a second measured


def test_eta_is_the_pace_measured_since_the_first_progress_not_since_the_start():
    """An evaluation: opening the index took 60 s before question 1 of 10 was done; then 3 s a question.
    Counting the 60 s (the old elapsed × rest / done) said 9 min; the measured pace says 24 s."""
    after_4 = 60 + 3 * 3
    assert seconds_left(0.4, after_4, 0.1, 60.0) == pytest.approx(18.0)
    assert after_4 * 0.6 / 0.4 > 100  # what the old estimate said
    assert seconds_left(1.0, 90.0, 0.1, 60.0) == 0.0


def test_estimate_and_its_long_threshold():
    machine = Throughput(bytes_per_s=3_000.0, chunks_per_byte=0.001, source="measured on this machine")
    big = estimate(30 * 1024 * 1024, machine)
    assert big.chunks == round(30 * 1024 * 1024 * 0.001) and big.seconds == pytest.approx(30 * 1024 * 1024 / 3000)
    assert big.long and not estimate(3_000 * int(LONG_INGEST_S) - 1, machine).long


def test_measurements_combine_by_bytes_and_persist_per_embedder(data_dir):
    first = combine(None, 1_000_000, 100.0, 1_000)
    assert (first.bytes_per_s, first.chunks_per_byte) == (10_000.0, 0.001)
    both = combine(first, 1_000_000, 300.0, 3_000)
    assert both.bytes_per_s == pytest.approx(2_000_000 / 400.0) and both.chunks_per_byte == pytest.approx(0.002)
    assert combine(first, 0, 5.0, 0) is first  # nothing indexed: nothing learned
    record(data_dir, "minilm", 1_000_000, 100.0, 1_000)
    record(data_dir, "hash", 1_000, 1.0, 1)
    assert load(data_dir, "minilm").bytes_per_s == 10_000.0 and load(data_dir, "other") is None
    for bad in ({"bytes_per_s": "x", "nope": 1}, {"bytes_per_s": "fast", "chunks_per_byte": 1, "source": "s"},
                {"bytes_per_s": 0, "chunks_per_byte": 1, "source": "s"}, [1, 2]):
        (data_dir / "throughput.json").write_text(json.dumps({"minilm": bad}))
        assert load(data_dir, "minilm") is None, bad  # an unreadable record is measured again, not a traceback


def test_measure_times_the_embedder_on_a_sample(data_dir):
    settings = Settings(data_dir=data_dir)
    index = Index.open("measure", settings, get_embedder("hash", settings, None))
    text = "\n\n".join(f"Paragraph {i} about topic{i} with some words to chunk." for i in range(2000))
    doc = load_bytes("big.txt", text.encode())
    found = measure(index, [doc], sample_bytes=4096)
    assert found is not None and found.bytes_per_s > 0 and 0 < found.chunks_per_byte < 1
    assert measure(index, []) is None


def test_an_ingest_estimate_uses_the_recorded_figure_else_measures_big_uploads_once(data_dir):
    settings = Settings(data_dir=data_dir)
    index = Index.open("estimate", settings, get_embedder("hash", settings, None))
    small = load_bytes("small.md", b"# Small\n\nA few words.\n")
    assert ingest_estimate(index, [small], data_dir) is None  # small, nothing recorded: not worth measuring
    big = load_bytes("big.txt", "\n\n".join(f"Paragraph {i} of words." for i in range(8000)).encode())
    first = ingest_estimate(index, [big], data_dir)
    assert first is not None and first.source == "measured on a sample of these files" and first.chunks > 0
    assert load(data_dir, index.embedder.id) is not None  # kept: the next estimate does not measure again
    record(data_dir, index.embedder.id, 10_000_000, 10_000.0, 5_000)  # a slow machine's real ingest
    slow = ingest_estimate(index, [big], data_dir)
    assert slow.source == "measured on this machine" and slow.long and slow.seconds > first.seconds
    assert duration_text(slow.seconds).startswith("about ")
    assert (duration_text(150), duration_text(3 * 3600 + 600), duration_text(7200)) == (
        "about 2 min", "about 3 h 10 min", "about 2 h")


def test_the_pace_is_measured_over_a_recent_window_so_a_past_stall_drops_out():
    """Cached texts went at once, then the model loaded for 30 s, then 1% a second: measured from the first
    movement the ETA said twice the truth; over the window it is the pace of now."""
    points = [(1.0, 0.6), (31.0, 0.6)] + [(31.0 + s, 0.6 + 0.01 * s) for s in range(1, 31)]
    now, progress = points[-1]
    anchor = pace_anchor(points, now)
    assert anchor[0] >= now - max(20.0, (now - 1.0) / 2)
    assert seconds_left(progress, now, *reversed(anchor)) == pytest.approx(10.0)
    assert seconds_left(progress, now, points[0][1], points[0][0]) == pytest.approx(20.0)  # the stall counted
    assert pace_anchor([], 5.0) is None and pace_anchor([(1.0, 0.1)], 100.0) == (1.0, 0.1)
