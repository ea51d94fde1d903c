print("forward-bench")
