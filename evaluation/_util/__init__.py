"""Small helpers every package of the harness shares: atomic files, JSON values, the cache
directory, files already verified (by stat signature), NumPy's huge-page advice switched off
where it stalls, exact int64 conversion, id lookups, parameter checks."""
