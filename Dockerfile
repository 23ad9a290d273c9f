# The same app as `make run`: the Makefile does the install, the demo load and the start.
FROM python:3.11-slim
RUN apt-get update && apt-get install -y --no-install-recommends make && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . .
RUN make install
EXPOSE 8501
CMD ["make", "run", "HOST=0.0.0.0"]
