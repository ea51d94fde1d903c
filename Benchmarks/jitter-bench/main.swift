print("jitter-bench")
