print("opus-bench")
