"""Small helpers every package of the harness shares: atomic files, JSON values, the cache
directory, exact int64 conversion, id lookups, parameter checks, deprecated import paths."""
