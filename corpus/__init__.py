"""The corpus store: findings bucketed by signature, buckets grouped into bugs, content-addressed
case files, campaign state, users' verdicts (see ``corpus.store``)."""
from .store import (DEFAULT_CORPUS, MAX_FINDINGS_PER_BUCKET, SCHEMA_VERSION, Corpus,
                    CorpusError, UnknownBucket, UnknownBug, UnknownCase, case_hash, case_size,
                    format_bucket, format_buckets, format_bug, format_bugs, representative,
                    versions)

__all__ = ["DEFAULT_CORPUS", "MAX_FINDINGS_PER_BUCKET", "SCHEMA_VERSION", "Corpus",
           "CorpusError", "UnknownBucket", "UnknownBug", "UnknownCase", "case_hash", "case_size",
           "format_bucket", "format_buckets", "format_bug", "format_bugs", "representative",
           "versions"]
