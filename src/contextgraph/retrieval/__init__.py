"""Retrieval kernels: pure functions over ranks and scores (the service that runs the five stages lives in
services/search.py)."""
