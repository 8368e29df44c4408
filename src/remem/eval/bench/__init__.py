"""`remem bench`: speed and scale on synthetic facts (`synthetic`), the LLM pipeline's cost
(`llm`) and the HTTP service's throughput (`http`)."""
