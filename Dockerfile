# The app installed with pip, as anyone installs it, and started by its own command.
FROM python:3.11-slim
COPY . /src
RUN pip install --no-cache-dir -r /src/requirements.txt && pip install --no-cache-dir --no-deps /src && rm -rf /src
# The default database: /data/agent_replay.db (mount a volume there to keep it).
ENV AGENT_REPLAY_HOME=/data LITELLM_LOCAL_MODEL_COST_MAP=True
WORKDIR /data
EXPOSE 8501
CMD ["agent-replay", "serve", "--demo", "--host", "0.0.0.0"]
