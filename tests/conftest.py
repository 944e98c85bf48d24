"""Shared fixtures. Real components only: real SQLite with sqlite-vec, real ONNX models."""
