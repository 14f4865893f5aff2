"""Evaluate page renderers: run, results, sweep, configuration and bundle panels, draft questions, tune."""
