"""Small helpers every package of the harness shares: atomic files, JSON values, the cache
directory, files already verified (by stat signature), NumPy's huge-page advice switched off
where it stalls, exact int64 conversion, id lookups, parameter checks, warnings given once per
process, the recognition of a copied official 2022/2023 ``evaluation/`` folder, and the
import hook that names the reclist 0.x modules for old code."""
