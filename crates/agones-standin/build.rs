//! Generates the server side of the Agones SDK's gRPC services from the vendored proto
//! files, the same files the `agones` crate generates its client from.

fn main() {
    tonic_build::configure()
        // Only the sidecar's side: the client is the `agones` crate's.
        .build_client(false)
        .compile_protos(
            &["proto/sdk/sdk.proto", "proto/sdk/beta/beta.proto"],
            &["proto/sdk", "proto/googleapis", "proto/grpc-gateway"],
        )
        .expect(
            "cannot compile the Agones SDK protos (is protoc installed? scripts/setup installs it)",
        );
}
