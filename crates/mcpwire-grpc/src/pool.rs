//! Descriptors: from a descriptor-set file (`protoc --descriptor_set_out
//! --include_imports`, `buf build -o`), or asked of the server by reflection (v1, else
//! v1alpha), imports the server does not serve taken from Google's well-known files.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use prost::Message;
use prost_reflect::DescriptorPool;
use prost_types::FileDescriptorProto;
use tonic::transport::Channel;

use crate::GrpcError;

/// Most files asked for by reflection (imports included).
const MAX_FILES: usize = 1000;

/// The pool a descriptor-set file holds.
pub fn from_file_set(bytes: &[u8]) -> Result<DescriptorPool, GrpcError> {
    DescriptorPool::decode(bytes).map_err(|e| GrpcError::Descriptors(e.to_string()))
}

/// The pool of every service `channel`'s server offers by reflection (besides the
/// reflection service itself), with the services' names.
pub async fn from_reflection(
    channel: Channel,
    timeout: Duration,
) -> Result<(DescriptorPool, Vec<String>), GrpcError> {
    let v1 = tokio::time::timeout(timeout, v1::fetch(channel.clone())).await;
    let (services, files) = match v1 {
        Ok(Ok(found)) => found,
        Ok(Err(e)) if e.code() == tonic::Code::Unimplemented => {
            tracing::debug!("reflection v1 unimplemented, trying v1alpha");
            tokio::time::timeout(timeout, v1alpha::fetch(channel))
                .await
                .map_err(|_| GrpcError::Reflection(format!("no answer within {timeout:?}")))?
                .map_err(|e| GrpcError::Reflection(status_text(&e)))?
        }
        Ok(Err(e)) => return Err(GrpcError::Reflection(status_text(&e))),
        Err(_) => {
            return Err(GrpcError::Reflection(format!(
                "no answer within {timeout:?}"
            )));
        }
    };
    Ok((build(files)?, services))
}

fn status_text(s: &tonic::Status) -> String {
    format!("{:?}: {}", s.code(), s.message())
}

/// A pool from files in any order, missing Google well-known imports added.
fn build(mut files: BTreeMap<String, FileDescriptorProto>) -> Result<DescriptorPool, GrpcError> {
    let wanted: BTreeSet<String> = files.values().flat_map(|f| f.dependency.clone()).collect();
    for name in wanted {
        if !files.contains_key(&name)
            && let Some(f) = DescriptorPool::global().get_file_by_name(&name)
        {
            files.insert(name, f.file_descriptor_proto().clone());
        }
    }
    let mut pool = DescriptorPool::new();
    pool.add_file_descriptor_protos(files.into_values())
        .map_err(|e| GrpcError::Descriptors(e.to_string()))?;
    Ok(pool)
}

fn decode_files(
    raw: Vec<Vec<u8>>,
    into: &mut BTreeMap<String, FileDescriptorProto>,
) -> Result<(), tonic::Status> {
    for bytes in raw {
        let f = FileDescriptorProto::decode(bytes.as_slice())
            .map_err(|e| tonic::Status::internal(format!("a file descriptor: {e}")))?;
        into.insert(f.name().to_owned(), f);
    }
    Ok(())
}

/// One reflection client per protocol version (their messages are twins).
macro_rules! reflection {
    ($version:ident) => {
        mod $version {
            use std::collections::BTreeMap;

            use prost_types::FileDescriptorProto;
            use tonic::transport::Channel;
            use tonic_reflection::pb::$version::ServerReflectionRequest;
            use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
            use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
            use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;

            use super::{MAX_FILES, decode_files};

            async fn ask(
                client: &mut ServerReflectionClient<Channel>,
                requests: Vec<MessageRequest>,
            ) -> Result<Vec<MessageResponse>, tonic::Status> {
                let stream =
                    futures::stream::iter(requests.into_iter().map(|r| ServerReflectionRequest {
                        host: String::new(),
                        message_request: Some(r),
                    }));
                let mut answers = client.server_reflection_info(stream).await?.into_inner();
                let mut out = Vec::new();
                while let Some(a) = answers.message().await? {
                    if let Some(m) = a.message_response {
                        out.push(m);
                    }
                }
                Ok(out)
            }

            /// The services' names and every file they need that the server serves.
            pub(super) async fn fetch(
                channel: Channel,
            ) -> Result<(Vec<String>, BTreeMap<String, FileDescriptorProto>), tonic::Status> {
                let mut client = ServerReflectionClient::new(channel);
                let mut services = Vec::new();
                for m in ask(
                    &mut client,
                    vec![MessageRequest::ListServices(String::new())],
                )
                .await?
                {
                    if let MessageResponse::ListServicesResponse(l) = m {
                        services.extend(
                            l.service
                                .into_iter()
                                .map(|s| s.name)
                                .filter(|n| !n.starts_with("grpc.reflection.")),
                        );
                    }
                }
                let mut files = BTreeMap::new();
                let mut requests: Vec<MessageRequest> = services
                    .iter()
                    .map(|s| MessageRequest::FileContainingSymbol(s.clone()))
                    .collect();
                while !requests.is_empty() {
                    for m in ask(&mut client, requests).await? {
                        match m {
                            MessageResponse::FileDescriptorResponse(f) => {
                                decode_files(f.file_descriptor_proto, &mut files)?
                            }
                            MessageResponse::ErrorResponse(e) => tracing::debug!(
                                code = e.error_code,
                                "reflection: {}",
                                e.error_message
                            ),
                            _ => {}
                        }
                    }
                    if files.len() > MAX_FILES {
                        return Err(tonic::Status::resource_exhausted(format!(
                            "more than {MAX_FILES} files"
                        )));
                    }
                    // Imports not served yet (Google's own files may never be: they are
                    // added from the well-known set).
                    let missing: std::collections::BTreeSet<String> = files
                        .values()
                        .flat_map(|f| f.dependency.iter().cloned())
                        .filter(|d| !files.contains_key(d) && !d.starts_with("google/protobuf/"))
                        .collect();
                    requests = missing
                        .into_iter()
                        .map(MessageRequest::FileByFilename)
                        .collect();
                    // A file the server does not have is asked for once only.
                    for r in &requests {
                        if let MessageRequest::FileByFilename(n) = r {
                            files
                                .entry(n.clone())
                                .or_insert_with(|| FileDescriptorProto {
                                    name: Some(n.clone()),
                                    ..FileDescriptorProto::default()
                                });
                        }
                    }
                }
                Ok((services, files))
            }
        }
    };
}

reflection!(v1);
reflection!(v1alpha);
