"""Peer engines (Hugging Face transformers, llama.cpp) for bench/e2e_bench.py --peers."""
