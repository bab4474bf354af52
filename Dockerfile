# One image for every role: the command chooses it (serve, worker, keys, approve; dev too).
#   docker build -t durable-responses .
#   docker run --rm durable-responses --help
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
# bubblewrap: the sandbox code_interpreter and the hosted shell run in (docs/code-execution.md:
# a worker's container needs the security options compose.yaml gives it).
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY pyproject.toml README.md ./
COPY access ./access
COPY activities ./activities
COPY api ./api
COPY http_plumbing ./http_plumbing
COPY response_service ./response_service
COPY chat_completions ./chat_completions
COPY context ./context
COPY demo ./demo
COPY models ./models
COPY store ./store
COPY telemetry ./telemetry
COPY upstream ./upstream
COPY sealing ./sealing
COPY web_search ./web_search
COPY file_search ./file_search
COPY sandbox ./sandbox
COPY websocket_mode ./websocket_mode
COPY guardrails ./guardrails
COPY inbox ./inbox
COPY worker ./worker
COPY workflows ./workflows
RUN pip install . && useradd --uid 10001 --create-home app && install -d -o 10001 -g 10001 /home/app/containers
USER 10001

EXPOSE 8000 9000
ENTRYPOINT ["durable-responses"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8000"]
