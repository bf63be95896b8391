"""The PR-curves plugin: precision-recall curves, one per step."""
