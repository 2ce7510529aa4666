"""The synthetic source: a seeded generator of LFM-shaped datasets, cached on disk.

The generator draws a latent structure first and the observations from it:

* ``K`` taste clusters with unequal sizes. Artists belong to one cluster; tracks are nested in
  albums, albums in artists. Each track gets a vector (dimension 32) near its artist's vector,
  which sits near its cluster's centre, so cosine similarity reflects the taste structure.
* Track popularity within a cluster is a power law over the tracks ranked by a popularity
  score (artist popularity plus noise), so popular artists have popular tracks.
* Each user has a primary and a secondary cluster drawn from preferences that depend on the
  user's country, age band and gender. A user's rows come from the primary cluster (50 %),
  the secondary one (20 %) or the whole catalogue ranked by the same popularity score (30 %,
  where the global hits live); a per-user "mainstreamness" leans towards the head or the tail
  of each ranking. Each (user, track) pair occurs at most once; rows per user are capped.
* Play counts are log-normal (heavy-tailed, at least 1) with a per-user level; each user's
  rows fall in an activity window after their registration.

The users table is a twin of the challenge's (source ``lfm``): the same columns, names, order,
dtypes and unknown codes (:mod:`._lfm_columns`): ``age`` int32 with ``-1`` when unknown,
``registered_unixtime``, LFM-1b's listening-profile statistics and ``country_id`` /
``gender_id``. The statistics follow from the user's rows and latent traits: the
``cnt_*`` counts are the rows' totals plus the listening outside the challenge's tracks,
mainstreaminess follows the user's lean to the popular head, the hour and weekday shares are
per-user draws around a common daily rhythm, and a window's statistic is missing (NaN) when the
user's activity is shorter than the window. ``playcount`` is the Last.fm profile's total, as in
LFM-1b: mostly the listening count and somewhat more, but for a few percent of users a small
number unrelated to their history (0 to about 2,000), so that every play-count band
(<= 10, 11-100, 101-1,000, > 1,000) has users at every scale.

Columns use the harness's canonical dtypes (int32 for every integer column: timestamps are
unix seconds before 2038), so the tables pass schema validation without a conversion.

Everything is vectorised NumPy driven by ``numpy.random.Generator`` streams seeded with
``seed`` (one for the catalogue, users and events, one for the users' profile columns), so the
same ``(scale, seed)`` gives the same tables, bit for bit, with the same NumPy version (whose
random streams are stable within a version). Ids increase with random gaps: like the real
data's, they are not row numbers.

Parameters were tuned so that the challenge's folds (25 % of the users, k-core 10, one test
row per user) of the ``full`` scale match the per-fold statistics of the real data; see
``benchmarks/synthetic_realism.py``.

String columns of the tracks table follow the 2022 CSV files: ``albums`` holds a Python-list
literal of album titles (``"['Blue Harbour']"``) and ``albums_id`` one of album ids
(``"[12345]"``); every synthetic track is on exactly one album, the events' ``album_id``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from evaluation._util.arrays import sorted_unique
from evaluation._util.paths import cache_dir
from evaluation._util.validation import check_choice, check_int
from evaluation.data._lfm_columns import GENDER_IDS, LFM_USER_COLUMNS, UNKNOWN
from evaluation.data._parquet import read_tables, write_tables
from evaluation.data._tables import Tables, TrackVectors
from evaluation.errors import ConfigError, DataError, SyntheticCacheWarning

# Bump when the generator's output changes for a given (scale, seed): it names the cache.
GENERATOR_VERSION = 4

VECTOR_DIM = 32
# 158 country codes in the order of their frequency in the LFM data (Last.fm writes UK, not GB).
SYNTHETIC_COUNTRIES = (
    "US RU DE UK PL BR FI NL ES SE UA CA FR IT JP MX AU CZ BE NO TR AR CL CO DK AT CH PT HU RO "
    "BY LT LV EE IE SK BG HR RS SI GR IL IN ID CN KR TW HK SG MY TH PH VN NZ ZA EG MA TN DZ NG "
    "KE GH VE PE EC UY PY BO CR PA GT HN SV NI DO PR CU JM TT IS LU MT CY MK AL BA ME MD GE AM "
    "AZ KZ UZ KG TJ TM MN IR IQ SA AE QA KW BH OM JO LB SY YE PK BD LK NP AF KH LA MM BN MO MV "
    "BT FJ PG SN CI CM ET TZ UG ZM ZW MZ AO NA BW MG MU RE SC LY SD GL FO AD MC SM LI GI BM BS "
    "BB AG DM GD KN LC VC AW"
).split()
_COUNTRY_MISSING = 0.54
_COUNTRY_ZIPF = 1.1
_GENDERS = np.array(["n", "m", "f"], dtype=object)
_GENDER_P = np.array([0.532, 0.332, 0.134, 0.002])  # n, m, f, missing
_AGE_MISSING = 0.3
_AGE_BANDS = np.array([18.0, 22.0, 26.0, 31.0, 40.0])  # left edges of bands 1..5 (0: < 18)

# Unix seconds: registrations 2005..2016, listening until 2020-03-01.
_T_REG_START = 1104537600  # 2005-01-01
_T_REG_END = 1451606400  # 2016-01-01
_T_END = 1583020800  # 2020-03-01
_DAY = 86400


@dataclass(frozen=True)
class _Scale:
    users: int
    tracks: int
    clusters: int
    rows_cap: int  # most rows a user can have
    rows_mean: float  # mean of the requested rows per user (before de-duplication)
    tracks_per_artist: float
    zipf_offset: float  # track weight ~ (rank + zipf_offset) ** -alpha within a cluster
    hit_offset: float  # the same over the whole catalogue, for draws outside a user's clusters
    chunk_users: int


SCALES: dict[str, _Scale] = {
    "tiny": _Scale(users=600, tracks=1_500, clusters=6, rows_cap=220, rows_mean=140,
                   tracks_per_artist=6.0, zipf_offset=1.0, hit_offset=4.0,
                   chunk_users=600),
    "small": _Scale(users=8_000, tracks=55_000, clusters=24, rows_cap=400, rows_mean=240,
                    tracks_per_artist=7.0, zipf_offset=6.0, hit_offset=30.0,
                    chunk_users=8_000),
    "full": _Scale(users=119_555, tracks=820_998, clusters=64, rows_cap=500, rows_mean=322,
                   tracks_per_artist=8.0, zipf_offset=35.0, hit_offset=60.0,
                   chunk_users=12_000),
}

# Taste model.
_P_PRIMARY = 0.50  # share of a user's draws from their primary cluster
_P_SECONDARY = 0.20  # ... from their secondary cluster; the rest from the whole catalogue
_ZIPF_ALPHA = 0.83  # power-law exponent of track weights by popularity rank
_MAINSTREAM_SD = 0.25
_ROWS_A = 1.8  # rows per user ~ cap * Beta(_ROWS_A, b), b from the scale's mean

# Users' profile columns (their own random stream; see _users_frame).
_PROFILE_STREAM = 0x7701  # the second seed word of that stream
_LE_EXTRA = 3.0  # median listening outside the challenge's tracks, per listen in them
_TRACKS_EXTRA = 1.5  # median distinct tracks outside them, per track in them
_ARTISTS_EXTRA = 1.0  # the same for artists
_PROFILE_EXTRA = 0.3  # median profile plays beyond the listening count, per listen
_SMALL_PLAYCOUNT = 0.04  # share of users whose profile shows a small, unrelated total
_SMALL_PLAYCOUNT_LOG10 = 3.3  # such a total is floor(10 ** U(0, this)) - 1: 0 .. ~2,000
_PLAYCOUNT_CAP = 5_000_000
_SHARE_CONCENTRATION = 60.0  # Dirichlet concentration of the hour and weekday shares
_WEEKDAY_RHYTHM = np.array([1.0, 1.02, 1.02, 1.01, 0.99, 0.94, 0.96])  # Monday .. Sunday

_WORDS = np.array(
    """
    after air alone amber angel april ash autumn avenue baby bad ballad bay bell belong black
    blind blood blue bone born bridge broken burn call candle carry chain change city clear cloud
    cold colour come crash crown crystal dance dark dawn day dead deep desert devil diamond dream
    drift drive dust east echo edge electric empty end eye fade faith fall fever field fire first
    flame float flower fly forest forever free frozen garden ghost girl glass gold golden gone
    grace gravity green grey half harbour heart heaven high highway hollow home honey horizon
    hunter ice iron island jungle keep kid kill king kiss lake last late light lightning line lion
    little lonely long lost love low lucky machine magic mirror moon morning mountain never neon
    night north ocean old only paper paradise part people pink poison power rain red river road
    rock rose run sad salt sand secret shadow shine silence silver sky sleep slow smoke snow soul
    sound south spark spirit star stone storm strange street summer sun sweet tide tiger time
    tonight touch town train true twilight under valley velvet violet voice wait wake walk war
    water wave west white wild wind window wine winter wire wolf world young zero
    """.split()
)


def synthetic_tables(scale: str = "small", seed: int = 42) -> Tables:
    """The synthetic dataset ``scale`` (``tiny``, ``small`` or ``full``) for ``seed``.

    Generated once and cached under ``cache_dir() / "synthetic"``; later calls read the cache,
    checking each file against the sha256 recorded when it was written. A damaged cache (a
    truncated, missing or replaced file) is regenerated, with a :class:`SyntheticCacheWarning`
    naming the file.

    Parameters
    ----------
    scale : {"tiny", "small", "full"}
        Size of the dataset.
    seed : int
        Generator seed (>= 0).

    Returns
    -------
    Tables
        The dataset (events, users, tracks and track vectors).

    Raises
    ------
    ConfigError
        On an unknown scale or a bad seed.
    """
    params = _scale_params(scale)
    seed = check_int("seed", seed, minimum=0, owner="synthetic_tables")
    path = synthetic_cache_path(scale, seed)
    source = f"synthetic:{scale}:seed{seed}"
    if path.exists():
        try:
            tables = read_tables(path, strict=True, upgrade=True)
            if tables.source != source:
                raise DataError(f"{path}: holds the dataset {tables.source!r}, not {source!r}")
            return tables
        except DataError as exc:
            warnings.warn(f"synthetic dataset cache: {exc}. Regenerating it.",
                          SyntheticCacheWarning, stacklevel=2)
    tables = generate_tables(params, seed, source=source)
    try:
        write_tables(tables, path, replace=True)
    except OSError:
        pass  # a read-only cache only costs regeneration next time
    return tables


def synthetic_cache_path(scale: str, seed: int) -> Path:
    """Directory where the synthetic dataset ``(scale, seed)`` is cached."""
    return cache_dir() / "synthetic" / f"{scale}-seed{seed}-v{GENERATOR_VERSION}"


def _scale_params(scale) -> _Scale:
    """The generator's parameters for the scale named ``scale``."""
    return SCALES[check_choice("scale", scale, SCALES, owner="synthetic_tables")]


def generate_tables(params: _Scale, seed: int, source: str = "synthetic") -> Tables:
    """Generate a dataset with ``params`` from ``seed`` (no caching)."""
    rng = np.random.default_rng(seed)
    cat = _catalogue(rng, params)
    users = _users(rng, params, cat)
    ev = _events(rng, params, cat, users)

    user_ids = _ids(rng, params.users, gap=6)
    track_ids = _shuffled_ids(rng, params.tracks, gap=3)
    artist_ids = _shuffled_ids(rng, len(cat["artist_cluster"]), gap=4)
    album_ids = _shuffled_ids(rng, cat["n_albums"], gap=3)

    u, t = ev["user"], ev["track"]
    events = pd.DataFrame({
        "user_id": user_ids[u],
        "artist_id": artist_ids[cat["track_artist"][t]],
        "album_id": album_ids[cat["track_album"][t]],
        "track_id": track_ids[t],
        "timestamp": ev["timestamp"],
        "user_track_count": ev["count"],
    })
    del u, t

    # A stream of its own: the catalogue, users and events above draw what they drew before
    # the profile columns existed, so their values (and every score on them) are unchanged.
    profile_rng = np.random.default_rng([seed, _PROFILE_STREAM])
    users_df = _users_frame(profile_rng, users, ev, cat, user_ids)
    tracks_df = _tracks_frame(rng, cat, track_ids, artist_ids, album_ids)
    vectors = TrackVectors(track_ids, cat["vectors"])
    return Tables(events=events, users=users_df, tracks=tracks_df, track_vectors=vectors,
                  source=source)


# --- latent structure -------------------------------------------------------------------------

def _catalogue(rng: np.random.Generator, p: _Scale) -> dict:
    """Clusters, artists, albums and tracks (track index is cluster-major, artist-contiguous)."""
    k = p.clusters
    cluster_mass = (np.arange(k) + 3.0) ** -0.7
    cluster_mass /= cluster_mass.sum()

    # Artists with a heavy-tailed number of tracks, cut to exactly p.tracks tracks.
    est = int(p.tracks / p.tracks_per_artist * 1.5) + 10
    sizes = 1 + np.floor(rng.lognormal(np.log(p.tracks_per_artist) - 0.9, 1.1, est)).astype(
        np.int64)
    ends = np.cumsum(sizes)
    n_artists = int(np.searchsorted(ends, p.tracks)) + 1
    if n_artists > est:  # pragma: no cover - the 1.5x margin makes this practically impossible
        raise RuntimeError("synthetic catalogue: artist size draw too small")
    sizes = sizes[:n_artists]
    sizes[-1] -= ends[n_artists - 1] - p.tracks
    artist_cluster = np.sort(rng.choice(k, n_artists, p=cluster_mass))  # cluster-major order
    artist_pop = rng.normal(0.0, 1.0, n_artists)

    track_artist = np.repeat(np.arange(n_artists), sizes)
    artist_start = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    pos_in_artist = np.arange(p.tracks) - artist_start[track_artist]
    album_size = 1 + rng.poisson(9.0, n_artists)
    artist_albums = -(-sizes // album_size)
    album_offset = np.concatenate([[0], np.cumsum(artist_albums)[:-1]])
    track_album = album_offset[track_artist] + pos_in_artist // album_size[track_artist]
    n_albums = int(artist_albums.sum())

    track_cluster = artist_cluster[track_artist]
    cluster_size = np.bincount(track_cluster, minlength=k)
    cluster_start = np.concatenate([[0], np.cumsum(cluster_size)[:-1]])
    # Popularity rank within the cluster: popular artists have popular tracks.
    score = artist_pop[track_artist] + rng.normal(0.0, 0.8, p.tracks)
    cluster_order = np.lexsort((-score, track_cluster)).astype(np.int32)
    global_order = np.argsort(-score, kind="stable").astype(np.int32)
    # The supply of each cluster is what users can draw: its share of the draws follows its size.
    cluster_share = cluster_size / cluster_size.sum()

    vectors = _vectors(rng, k, artist_cluster, track_artist, p.tracks)
    return dict(
        artist_cluster=artist_cluster, track_artist=track_artist, track_album=track_album,
        n_albums=n_albums, cluster_size=cluster_size,
        cluster_start=cluster_start, cluster_order=cluster_order, global_order=global_order,
        cluster_share=cluster_share, vectors=vectors,
    )


def _vectors(rng, k, artist_cluster, track_artist, n_tracks) -> np.ndarray:
    """Unit vectors: cluster centre + artist offset + track noise (float32).

    Expected cosines: about 0.6 between tracks of one artist, 0.45 between tracks of one
    cluster, 0 across clusters.
    """
    centres = _unit(rng.normal(0.0, 1.0, (k, VECTOR_DIM)))
    noise_scale = 1.0 / np.sqrt(VECTOR_DIM)  # unit expected norm
    artist = _unit(centres[artist_cluster]
                   + 0.6 * noise_scale * rng.normal(0.0, 1.0, (len(artist_cluster), VECTOR_DIM)))
    track = artist[track_artist] + 0.8 * noise_scale * rng.normal(0.0, 1.0,
                                                                  (n_tracks, VECTOR_DIM))
    return _unit(track).astype(np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _users(rng: np.random.Generator, p: _Scale, cat: dict) -> dict:
    """User attributes, taste clusters, activity."""
    n, k = p.users, p.clusters
    # Country and gender: exact shares (so the frequency order holds at every scale), dealt
    # to users in random order. Country is missing for 54 %, the rest Zipf over the codes.
    weights = (np.arange(len(SYNTHETIC_COUNTRIES)) + 1.0) ** -_COUNTRY_ZIPF
    shares = np.append((1.0 - _COUNTRY_MISSING) * weights / weights.sum(), _COUNTRY_MISSING)
    country_idx = rng.permutation(_allocate(shares, n))  # index len(SYNTHETIC_COUNTRIES): missing
    country = np.append(np.array(SYNTHETIC_COUNTRIES, dtype=object), [None])[country_idx]
    gender_idx = rng.permutation(_allocate(_GENDER_P, n))
    gender = np.append(_GENDERS, [None])[gender_idx]

    age = np.round(14.0 + rng.gamma(2.6, 4.6, n))
    age = np.minimum(age, 75.0)
    age[rng.random(n) < _AGE_MISSING] = np.nan
    age_band = np.where(np.isnan(age), 6, np.searchsorted(_AGE_BANDS, age, side="right"))

    # Cluster preferences depend on country, age band and gender (shared effects per group).
    log_mass = np.log(cat["cluster_share"])
    country_eff = rng.normal(0.0, 1.0, (len(SYNTHETIC_COUNTRIES) + 1, k))
    country_eff[-1] = 0.0
    age_eff = rng.normal(0.0, 0.8, (7, k))
    gender_eff = rng.normal(0.0, 0.4, (4, k))
    pref = country_eff[country_idx] + age_eff[age_band] + gender_eff[gender_idx]
    primary = np.argmax(log_mass + pref + rng.gumbel(size=(n, k)), axis=1)
    secondary = np.argmax(log_mass + 0.5 * pref + rng.gumbel(size=(n, k)), axis=1)

    # Requested rows per user: a left-skewed hump below the cap, at least 20.
    rows = np.round(p.rows_cap * rng.beta(_ROWS_A, _ROWS_A * (p.rows_cap / p.rows_mean - 1.0), n))
    rows = np.clip(rows, 20, p.rows_cap).astype(np.int64)

    registered = rng.integers(_T_REG_START, _T_REG_END, n)
    start = np.minimum(registered + ((1.0 + rng.exponential(120.0, n)) * _DAY).astype(np.int64),
                       _T_END - 30 * _DAY)
    span = (rng.uniform(0.5, 10.0, n) * 365 * _DAY).astype(np.int64)
    end = np.minimum(start + span, _T_END)
    count_level = rng.normal(1.0, 0.6, n)
    # Mainstreamness z: a user draws from the slice [max(0, -z), 1 - max(0, z)] of a cluster's
    # popularity CDF, so z > 0 keeps to the popular head and z < 0 to the long tail.
    z = np.clip(rng.normal(0.0, _MAINSTREAM_SD, n), -0.6, 0.6)
    q_lo = np.maximum(0.0, -z)
    q_width = 1.0 - np.abs(z)
    return dict(country=country, gender=gender, age=age, primary=primary.astype(np.int32),
                secondary=secondary.astype(np.int32), rows=rows, registered=registered,
                start=start, end=end, count_level=count_level, q_lo=q_lo, q_width=q_width)


def _allocate(shares: np.ndarray, n: int) -> np.ndarray:
    """``n`` category codes with counts proportional to ``shares`` (largest remainders)."""
    exact = shares / shares.sum() * n
    counts = np.floor(exact).astype(np.int64)
    short = n - counts.sum()
    counts[np.argsort(-(exact - counts), kind="stable")[:short]] += 1
    return np.repeat(np.arange(len(shares)), counts)


# --- events -----------------------------------------------------------------------------------

def _events(rng: np.random.Generator, p: _Scale, cat: dict, users: dict) -> dict:
    """(user, track) rows, unique, sorted by user then time; in chunks of users to bound memory.

    Each draw gets a 64-bit key ``user | time | track`` whose time bits are a hash of the
    pair, so one sort both orders a user's rows by time and makes duplicate draws adjacent.
    """
    user_bits = max(1, int(p.users - 1).bit_length())
    track_bits = max(1, int(p.tracks - 1).bit_length())
    time_bits = 64 - user_bits - track_bits
    if time_bits < 16:  # pragma: no cover - only for scales far beyond the real data
        raise ConfigError(f"synthetic scale too large for 64-bit event keys ({p})")
    salt = np.uint64(rng.integers(1, 2**63))

    # Popularity orders: one per cluster, then the whole catalogue as pseudo-cluster K.
    k = p.clusters
    size = np.append(cat["cluster_size"], p.tracks).astype(np.float64)
    start = np.append(cat["cluster_start"], p.tracks)
    order = np.concatenate([cat["cluster_order"], cat["global_order"]])
    offset = np.append(np.full(k, p.zipf_offset), p.hit_offset)
    a1 = 1.0 - _ZIPF_ALPHA
    lo = offset ** a1
    hi = (size + offset) ** a1 - lo
    max_rank = size.astype(np.int64) - 1

    parts = []
    for first in range(0, p.users, p.chunk_users):
        last = min(first + p.chunk_users, p.users)
        n_draws = users["rows"][first:last]
        u = np.repeat(np.arange(first, last, dtype=np.int64), n_draws)
        r = rng.random(len(u))
        c = np.where(r < _P_PRIMARY, users["primary"][u],
                     np.where(r < _P_PRIMARY + _P_SECONDARY, users["secondary"][u], k))
        del r
        # Inverse CDF of the continuous power law (x + offset) ** -alpha on [0, size).
        q = users["q_lo"][u] + rng.random(len(u)) * users["q_width"][u]
        x = (lo[c] + q * hi[c]) ** (1.0 / a1) - offset[c]
        del q
        rank = np.minimum(x.astype(np.int64), max_rank[c])
        del x
        track = order[start[c] + rank].astype(np.uint64)
        del c, rank
        uu = u.astype(np.uint64)
        h = _mix64((uu << np.uint64(track_bits)) ^ track ^ salt) >> np.uint64(64 - time_bits)
        key = (uu << np.uint64(64 - user_bits)) | (h << np.uint64(track_bits)) | track
        del uu, h, track, u
        key.sort()
        keep = np.empty(len(key), dtype=bool)
        keep[0] = True
        np.not_equal(key[1:], key[:-1], out=keep[1:])
        parts.append(key[keep])
        del key, keep

    key = np.concatenate(parts)
    del parts
    user = (key >> np.uint64(64 - user_bits)).astype(np.int32)
    track = (key & np.uint64((1 << track_bits) - 1)).astype(np.int32)
    frac = ((key >> np.uint64(track_bits)) & np.uint64((1 << time_bits) - 1)).astype(np.float64)
    del key
    frac /= float(1 << time_bits)
    t0, t1 = users["start"][user], users["end"][user]
    timestamp = (t0 + (frac * (t1 - t0)).astype(np.int64)).astype(np.int32)
    del frac, t0, t1
    level = users["count_level"][user]
    count = 1 + np.floor(np.exp(level + 1.2 * rng.standard_normal(len(user))))
    count = np.minimum(count, 100_000).astype(np.int32)
    return dict(user=user, track=track, timestamp=timestamp, count=count)


def _mix64(x: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser: a fast, well-mixed 64-bit hash (uint64 in, uint64 out)."""
    x = x ^ (x >> np.uint64(30))
    x *= np.uint64(0xBF58476D1CE4E5B9)
    x ^= x >> np.uint64(27)
    x *= np.uint64(0x94D049BB133111EB)
    x ^= x >> np.uint64(31)
    return x


# --- the users table: the challenge's columns --------------------------------------------------

def _users_frame(rng: np.random.Generator, users: dict, ev: dict, cat: dict,
                 user_ids: np.ndarray) -> pd.DataFrame:
    """The users table with the challenge's columns (:data:`LFM_USER_COLUMNS`), in order."""
    n = len(user_ids)
    user = ev["user"]
    rows = np.bincount(user, minlength=n)
    plays = np.bincount(user, weights=ev["count"], minlength=n)
    # distinct artists per user: events are sorted by user, so unique (user, artist) keys
    n_artists = len(cat["artist_cluster"])
    pairs = sorted_unique(user.astype(np.int64) * n_artists + cat["track_artist"][ev["track"]])
    artists = np.bincount(pairs // n_artists, minlength=n)
    span_days = (users["end"] - users["start"]) / _DAY

    # LFM-1b counts every listening event; the challenge keeps a subset of the tracks, so a
    # user's LFM-1b totals are their rows' totals and several times more (LFM-1b: over 8,000
    # listening events per user on average).
    listening = plays + np.round(plays * _lognormal(rng, _LE_EXTRA, 0.8, n))
    distinct_tracks = rows + np.round(rows * _lognormal(rng, _TRACKS_EXTRA, 0.7, n))
    distinct_artists = np.minimum(
        artists + np.round(artists * _lognormal(rng, _ARTISTS_EXTRA, 0.7, n)), distinct_tracks)
    per_week = listening / np.maximum(span_days / 7.0, 1.0)

    # The profile's total: the listening count and somewhat more, except for a few percent of
    # users whose profile shows a small number unrelated to their history.
    playcount = listening + np.round(listening * _lognormal(rng, _PROFILE_EXTRA, 0.8, n))
    small = rng.random(n) < _SMALL_PLAYCOUNT
    small_count = np.floor(10.0 ** rng.uniform(0.0, _SMALL_PLAYCOUNT_LOG10, n)) - 1.0
    playcount = np.where(small, small_count, np.minimum(playcount, _PLAYCOUNT_CAP))

    # Novelty (share of artists new to the user in a window) and mainstreaminess (closeness to
    # the global popularity ranking), with the user's lean to the head of the rankings.
    novelty = rng.beta(2.0, 5.0, n)
    lean = np.where(users["q_lo"] > 0, -users["q_lo"], 1.0 - users["q_width"])
    mainstream = 1.0 / (1.0 + np.exp(2.0 - 3.0 * lean + rng.normal(0.0, 0.35, n)))
    month, half, year = span_days < 30, span_days < 182, span_days < 365

    def window(base: np.ndarray, shrink: float, sd: float, too_short: np.ndarray) -> np.ndarray:
        values = np.clip(shrink * base + rng.normal(0.0, sd, n), 0.0, 1.0)
        return np.where(too_short, np.nan, values)

    columns: dict[str, object] = {
        "country": pd.array(users["country"], dtype="str"),
        "age": np.where(np.isnan(users["age"]), UNKNOWN, users["age"]).astype(np.int32),
        "gender": pd.array(users["gender"], dtype="str"),
        "playcount": playcount.astype(np.int32),
        "registered_unixtime": users["registered"].astype(np.int32),
        "novelty_artist_avg_month": window(novelty, 1.0, 0.04, month),
        "novelty_artist_avg_6months": window(novelty, 0.9, 0.03, half),
        "novelty_artist_avg_year": window(novelty, 0.8, 0.03, year),
        "mainstreaminess_avg_month": window(mainstream, 1.0, 0.04, month),
        "mainstreaminess_avg_6months": window(mainstream, 1.0, 0.03, half),
        "mainstreaminess_avg_year": window(mainstream, 1.0, 0.02, year),
        "mainstreaminess_global": mainstream,
        "cnt_listeningevents": listening.astype(np.int32),
        "cnt_distinct_tracks": distinct_tracks.astype(np.int32),
        "cnt_distinct_artists": distinct_artists.astype(np.int32),
        "cnt_listeningevents_per_week": per_week,
    }
    weekdays = _shares(rng, _WEEKDAY_RHYTHM, n)
    hours = _shares(rng, 1.0 + 0.6 * np.cos(2.0 * np.pi * (np.arange(24) - 20) / 24.0), n)
    columns.update({f"relative_le_per_weekday{d + 1}": weekdays[:, d] for d in range(7)})
    columns.update({f"relative_le_per_hour{h}": hours[:, h] for h in range(24)})
    codes = {code: i for i, code in enumerate(sorted(SYNTHETIC_COUNTRIES))}
    columns["country_id"] = np.array([codes.get(c, UNKNOWN) for c in users["country"]],
                                     dtype=np.int32)
    columns["gender_id"] = np.array([GENDER_IDS.get(g, UNKNOWN) for g in users["gender"]],
                                    dtype=np.int32)
    frame = pd.DataFrame(columns, index=pd.Index(user_ids, name="user_id"))
    return frame[list(LFM_USER_COLUMNS)]


def _lognormal(rng: np.random.Generator, median: float, sigma: float, n: int) -> np.ndarray:
    """``n`` log-normal factors around ``median``, cut at 3 standard deviations (bounded)."""
    return median * np.exp(sigma * np.clip(rng.standard_normal(n), -3.0, 3.0))


def _shares(rng: np.random.Generator, rhythm: np.ndarray, n: int) -> np.ndarray:
    """``n`` rows of shares summing to 1: Dirichlet draws around ``rhythm`` (normalised)."""
    alpha = _SHARE_CONCENTRATION * rhythm / rhythm.sum()
    draws = rng.gamma(alpha, 1.0, (n, len(rhythm)))
    return draws / draws.sum(axis=1, keepdims=True)


# --- ids and names ----------------------------------------------------------------------------

def _ids(rng: np.random.Generator, n: int, gap: int) -> np.ndarray:
    """``n`` increasing int32 ids with random gaps (1..gap)."""
    return np.cumsum(rng.integers(1, gap + 1, n)).astype(np.int32)


def _shuffled_ids(rng: np.random.Generator, n: int, gap: int) -> np.ndarray:
    """Ids as :func:`_ids`, assigned to the ``n`` entities in random order."""
    return _ids(rng, n, gap)[rng.permutation(n)]


def _names(rng: np.random.Generator, n: int, words: int) -> pd.Series:
    """``n`` title-cased names of ``words`` random words each."""
    out = pd.Series(_WORDS[rng.integers(0, len(_WORDS), n)], dtype="str")
    for _ in range(words - 1):
        out = out + " " + pd.Series(_WORDS[rng.integers(0, len(_WORDS), n)], dtype="str")
    return out.str.title()


def _tracks_frame(rng, cat, track_ids, artist_ids, album_ids) -> pd.DataFrame:
    n_tracks = len(track_ids)
    n_artists = len(artist_ids)
    artist_names = _names(rng, n_artists, 2)
    the = rng.random(n_artists) < 0.25
    artist_names = artist_names.where(~the, "The " + artist_names)
    album_names = _names(rng, cat["n_albums"], 2)
    titles = _names(rng, n_tracks, 1).where(rng.random(n_tracks) < 0.4,
                                             _names(rng, n_tracks, 2))
    ta, tb = cat["track_artist"], cat["track_album"]
    frame = pd.DataFrame(
        {
            "track": titles.to_numpy(),
            "artist_id": artist_ids[ta],
            "artist": artist_names.to_numpy()[ta],
            "albums": ("['" + album_names + "']").to_numpy()[tb],
            "albums_id": ("[" + pd.Series(album_ids).astype("str") + "]").to_numpy()[tb],
        },
        index=pd.Index(track_ids, name="track_id"),
    )
    for col in ("track", "artist", "albums", "albums_id"):
        frame[col] = frame[col].astype("str")
    return frame.sort_index()
