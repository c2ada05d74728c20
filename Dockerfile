# The image of README's Kubernetes example: plansim installed on PATH, with
# the repository's scenarios and experiments under /work.
#   docker build -t plansim:latest .
#   docker run --rm plansim:latest plansim validate /work/experiments/churn-vs-count.yaml
# Push it to a registry your cluster pulls from and name it in the Job's `image:`.
FROM rust:1.89-slim AS build
WORKDIR /src
COPY . .
RUN cargo install --path . --locked --root /usr/local

FROM debian:bookworm-slim
COPY --from=build /usr/local/bin/plansim /usr/local/bin/plansim
COPY scenarios /work/scenarios
COPY experiments /work/experiments
WORKDIR /work
CMD ["plansim", "--help"]
