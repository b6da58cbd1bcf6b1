"""Search: the tokenizer, how notes become search documents, and BM25 ranking."""
