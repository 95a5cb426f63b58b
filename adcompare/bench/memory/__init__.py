"""The memory study: long loops differentiated with and without checkpointing."""
