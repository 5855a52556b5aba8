"""The corpus store: findings bucketed by signature, content-addressed case files, campaign
state (see ``corpus.store``)."""
from .store import (DEFAULT_CORPUS, MAX_FINDINGS_PER_BUCKET, SCHEMA_VERSION, Corpus,
                    CorpusError, UnknownBucket, UnknownCase, case_hash, case_size, format_bucket,
                    format_buckets, representative, versions)

__all__ = ["DEFAULT_CORPUS", "MAX_FINDINGS_PER_BUCKET", "SCHEMA_VERSION", "Corpus",
           "CorpusError", "UnknownBucket", "UnknownCase", "case_hash", "case_size", "format_bucket",
           "format_buckets", "representative", "versions"]
