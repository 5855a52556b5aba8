# tvmfuzz for distributed mode: the same image runs `tvmfuzz worker` and the coordinator
# (`tvmfuzz run --broker ...`). See docker-compose.yml and README.md, "Distributed mode".
FROM python:3.11-slim-bookworm

# gcc: the "c" target variant compiles the C that TVM generates. No nvcc: no CUDA variants.
# bubblewrap: the jail the worker runs every case from the broker in (README, "the jail").
RUN apt-get update -qq \
    && apt-get install -y -qq --no-install-recommends gcc libc6-dev bubblewrap \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /opt/tvmfuzz
COPY pyproject.toml README.md ./
COPY fuzz fuzz
COPY worker worker
COPY corpus corpus
COPY reducer reducer
COPY tvmfuzz tvmfuzz
# EXTRAS: "[monitor]" adds Flower (docker-compose.yml's flower service); empty by default.
ARG EXTRAS=""
RUN pip install --no-cache-dir --disable-pip-version-check ".${EXTRAS}" \
    && useradd --create-home --uid 1000 fuzz \
    && mkdir -p /data && chown fuzz /data

# Not root: Celery warns about it, and nothing here needs it. /data is the corpus volume
# (a new named volume takes this directory's owner).
USER fuzz
WORKDIR /data
ENV PYTHONUNBUFFERED=1
ENTRYPOINT ["tvmfuzz"]
CMD ["--help"]
