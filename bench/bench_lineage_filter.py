"""get_artifacts(list_options=ListOptions(filter_query=…)) latency: boardd vs ml-metadata.

Both stores get the same artifacts (two types with properties, a custom property, a context
for each), written through the same API calls: boardd's lineage store in a SQLite file, and
ml-metadata 1.17.1 on SQLite in its own venv (the oracle harness of tests/metadata, built on
first use). Each query of a table runs on both; the ids must be equal, and the ratio
(ml-metadata's time / boardd's) is printed. ml-metadata's time is measured inside its process
(no pipe or JSON in it); boardd's is the Python call. The best of ``--repeat`` runs is kept.

    .venv/bin/python bench/bench_lineage_filter.py             # 100,000 artifacts
    .venv/bin/python bench/bench_lineage_filter.py --small     # 10,000, seconds

boardd's schema has ml-metadata's own property-value indexes (partial indexes on
(name, is_custom_property, int/double/string_value), its schema v8): without them, a
selective property filter (``properties.day.int_value = 6``) read the whole property table
and was 3-30x slower than ml-metadata; with them boardd was ahead on every query.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(REPO / "src"), str(REPO), str(REPO / "bench")]


import results  # noqa: E402  (bench/, put on the path above)

from boardd.metadata import metadata_store  # noqa: E402
from boardd.metadata.proto import metadata_store_pb2 as pb  # noqa: E402
from tests.metadata.oracle import MlmdOracle  # noqa: E402

#: (query, limit): limit None lists every match (the Python API pages through them all).
QUERIES: list[tuple[str, int | None]] = [
    ("uri LIKE '%/data' AND properties.day.int_value > 0", 100),
    ("properties.day.int_value = 6", None),
    ("type = 'Model' AND properties.version.int_value = 7", None),
    ("custom_properties.acc.double_value > 0.998", None),
    ("contexts_a.name = 'exp3'", None),
    ("contexts_a.name = 'exp3' AND properties.day.int_value < 100", None),
    ("name = 'a123'", None),
    (
        "state = LIVE AND properties.split.string_value = 'eval' AND properties.day.int_value < 10",
        None,
    ),
    ("type = 'Model'", None),
    ("properties.split.string_value = 'eval'", None),
]


def load(ours: metadata_store.MetadataStore, theirs: MlmdOracle, count: int) -> None:
    """The same records into both stores, checking that both answer the same ids."""

    def both(name: str, *args: object) -> object:
        mine = getattr(ours, name)(*args)
        other = theirs.call(name, *args)
        if mine != other:
            raise SystemExit(f"{name}: boardd answered {mine!r}, ml-metadata {other!r}")
        return mine

    dataset = pb.ArtifactType(name="DataSet")
    dataset.properties["day"] = pb.INT
    dataset.properties["split"] = pb.STRING
    model = pb.ArtifactType(name="Model")
    model.properties["version"] = pb.INT
    dataset_id = both("put_artifact_type", dataset)
    model_id = both("put_artifact_type", model)
    context_type = both("put_context_type", pb.ContextType(name="Experiment"))
    both("put_contexts", [pb.Context(type_id=context_type, name=f"exp{i}") for i in range(100)])
    started = time.perf_counter()
    for start in range(0, count, 2000):
        batch = []
        for i in range(start, min(count, start + 2000)):
            if i % 5 == 0:
                artifact = pb.Artifact(type_id=model_id, uri=f"path/{i}/model", name=f"a{i}")
                artifact.properties["version"].int_value = i % 50
            else:
                artifact = pb.Artifact(
                    type_id=dataset_id, uri=f"path/{i}/data", name=f"a{i}", state=pb.Artifact.LIVE
                )
                artifact.properties["day"].int_value = i % 365
                artifact.properties["split"].string_value = ("train", "eval", "test")[i % 3]
            artifact.custom_properties["acc"].double_value = (i % 1000) / 1000
            batch.append(artifact)
        ids = both("put_artifacts", batch)
        attributions = [pb.Attribution(artifact_id=a, context_id=1 + a % 100) for a in ids]
        both("put_attributions_and_associations", attributions, [])
        print(
            f"\rloaded {min(count, start + 2000):,} / {count:,} artifacts into both "
            f"({time.perf_counter() - started:.0f} s)",
            end="",
            file=sys.stderr,
            flush=True,
        )
    print(file=sys.stderr)


def measure(
    ours: metadata_store.MetadataStore, theirs: MlmdOracle, repeat: int, label: str
) -> list[dict[str, object]]:
    """Times every query on both stores, prints a row each; returns the figures."""
    figures = []
    print(f"\n{label}")
    print(f"{'rows':>6} {'boardd ms':>10} {'mlmd ms':>10} {'ratio':>7}  query")
    for query, limit in QUERIES:
        options = metadata_store.ListOptions(filter_query=query, limit=limit)
        mine_best = theirs_best = float("inf")
        for _ in range(repeat):
            began = time.perf_counter()
            mine = ours.get_artifacts(list_options=options)
            mine_best = min(mine_best, time.perf_counter() - began)
            other = theirs.call("get_artifacts", list_options=options)
            theirs_best = min(theirs_best, theirs.last_seconds)
        if [a.id for a in mine] != [a.id for a in other]:
            raise SystemExit(f"different answers to {query!r}")
        shown = query if limit is None else f"{query}  (limit {limit})"
        print(
            f"{len(mine):6d} {mine_best * 1000:10.1f} {theirs_best * 1000:10.1f} "
            f"{theirs_best / mine_best:6.2f}x  {shown}",
            flush=True,
        )
        figures.append(
            results.figure(
                shown,
                mine_best * 1000,
                theirs_best * 1000,
                unit="ms",
                better="lower",
                target="≥ 1× ml-metadata",
                met=mine_best <= theirs_best,
            )
        )
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--artifacts", type=int, default=100_000, help="how many (100,000)")
    parser.add_argument("--small", action="store_true", help="10,000 artifacts, one run each")
    parser.add_argument("--repeat", type=int, default=3, help="runs per query, best kept (3)")
    results.add_argument(parser)
    args = parser.parse_args(argv)
    count = 10_000 if args.small else args.artifacts
    repeat = 1 if args.small else args.repeat
    with tempfile.TemporaryDirectory(prefix="bench-lineage-filter-") as tmp:
        config = pb.ConnectionConfig()
        config.sqlite.filename_uri = f"{tmp}/boardd.sqlite"
        config.sqlite.connection_mode = pb.SqliteMetadataSourceConfig.READWRITE_OPENCREATE
        ours = metadata_store.MetadataStore(config)
        try:
            with MlmdOracle(f"{tmp}/mlmd.sqlite") as theirs:
                load(ours, theirs, count)
                figures = measure(ours, theirs, repeat, f"{count:,} artifacts")
        finally:
            ours.close()
    print(f"\nload average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    results.write(
        args.results,
        "bench_lineage_filter",
        title="Lineage store: get_artifacts with a filter_query",
        anchor="ml-metadata 1.17.1 on SQLite",
        workload=f"{count:,} artifacts of two types with properties, a context each; "
        f"the best of {repeat} run(s) per query",
        figures=figures,
        argv=argv,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
