"""Retrieval: query building, embeddings, vector index, fusion, scoring, context packing."""
