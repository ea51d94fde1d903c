print("parley-relay")
