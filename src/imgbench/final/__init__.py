"""The head-to-head final: after the matrix, its best loader configurations re-measured in one
process tree, round-robin in shuffled order, so that every candidate sees the same host states
(docs/final.md). Its rows (stage ``final``) are what the answer's figures come from."""
