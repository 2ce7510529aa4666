"""Small helpers every package of the harness shares: atomic files, JSON values, the cache
directory, exact int64 conversion, deprecated import paths."""
