"""Reading TensorBoard event files: pure, synchronous, no SQLite and no asyncio."""
