"""Models as affine programs: LLaMA-style decoders (:mod:`mica.models.llama`), their weights
(:mod:`mica.models.weights`) and greedy generation on a mesh with weights and KV caches resident
(:mod:`mica.models.generate`); exact k-NN vector search with the database resident (:mod:`mica.models.knn`)."""
