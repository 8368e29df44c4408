"""`remem eval`: memory quality measured on fixed benchmarks, reproducibly and offline.

    locomo      reading LoCoMo-format files leniently (turns, session dates, evidence)
    metrics     evidence recall@k, all-evidence hit@k, recall in a budget, compression
    runner      systems over a dataset: remem in three modes, and the figures
    prefeval    PrefEval-shaped files: seeded actors of N preferences, hit@k, packet sizes
    everyday    personas and the questions people ask: hit, coverage, empty packets, filler
    quality     write quality of extracted records: unknown words, speakers named
    baselines   BM25, dense and their fusion over raw turns, for comparison
    report      terminal tables and a PNG chart
    cli         the `remem eval` command group
    prototypes  proposed recall changes, measured beside remem (not used by recall)

Importing this package loads nothing else.
"""
