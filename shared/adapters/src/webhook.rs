//! MCP Events webhooks over HTTP, as the extension asks of a sender: https only, the address
//! checked when the connection is made (no loopback, private, link-local or metadata address
//! unless the deployment is local), no redirects followed, a short timeout, and nothing of
//! the receiver's answer kept but its status and the start of its body.

use std::time::Duration;

use reqwest::header::CONTENT_TYPE;

use crate::public_dns::{NotPublic, PublicOnly};
use domain::address::not_public;
use domain::delivery::{Answer, Failure};
use ports::{WebhookPost, WebhookReply, Webhooks, MAX_REPLY_BYTES};

/// The setting that lets callbacks be local.
pub const ALLOW_LOCAL: &str = "EVENTS_ALLOW_LOCAL_CALLBACKS";

#[derive(Clone)]
pub struct HttpWebhooks {
    client: reqwest::Client,
    allow_local: bool,
}

impl HttpWebhooks {
    /// A client that gives a receiver `timeout` to answer; with `allow_local` (local
    /// development), a callback may be http and on this machine or a private network.
    pub fn new(timeout: Duration, allow_local: bool) -> Result<Self, String> {
        crate::public_dns::install_tls_provider();
        let builder = reqwest::Client::builder()
            .connect_timeout(timeout.min(Duration::from_secs(3)))
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy();
        let builder = match allow_local {
            true => builder,
            false => builder.dns_resolver(std::sync::Arc::new(PublicOnly {
                allowed_by: ALLOW_LOCAL,
            })),
        };
        Ok(Self {
            client: builder.build().map_err(|e| e.to_string())?,
            allow_local,
        })
    }

    /// Whether `url` may be called at all: https (or http where local is allowed), and a
    /// host given as an address a public one (a name is checked when it is resolved).
    fn may_call(&self, url: &reqwest::Url) -> bool {
        let scheme_ok = url.scheme() == "https" || (self.allow_local && url.scheme() == "http");
        let address_ok = match url.host() {
            Some(url::Host::Ipv4(ip)) => self.allow_local || not_public(ip.into()).is_none(),
            Some(url::Host::Ipv6(ip)) => self.allow_local || not_public(ip.into()).is_none(),
            Some(url::Host::Domain(_)) => true,
            None => false,
        };
        scheme_ok && address_ok
    }
}

impl Webhooks for HttpWebhooks {
    async fn post(&self, post: &WebhookPost) -> WebhookReply {
        let refused = |failure| WebhookReply {
            answer: Answer::Failed(failure),
            body: Vec::new(),
        };
        let Ok(url) = reqwest::Url::parse(&post.url) else {
            return refused(Failure::ConnectionRefused);
        };
        if !self.may_call(&url) {
            return refused(Failure::ConnectionRefused);
        }
        let mut request = self
            .client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(post.body.clone());
        for (name, value) in &post.headers {
            request = request.header(*name, value);
        }
        let mut response = match request.send().await {
            Ok(response) => response,
            Err(e) => return refused(failure_of(&e)),
        };
        let status = response.status().as_u16();
        let mut body = Vec::new();
        // Only the start: a challenge's echo is small, and nothing else is read.
        while body.len() < MAX_REPLY_BYTES {
            match response.chunk().await {
                Ok(Some(chunk)) => body.extend_from_slice(&chunk),
                _ => break,
            }
        }
        body.truncate(MAX_REPLY_BYTES);
        WebhookReply {
            answer: Answer::Status(status),
            body,
        }
    }
}

/// The extension's category of a request that got no answer.
fn failure_of(error: &reqwest::Error) -> Failure {
    if error.is_timeout() {
        return Failure::Timeout;
    }
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if e.downcast_ref::<NotPublic>().is_some() {
            return Failure::ConnectionRefused;
        }
        if e.downcast_ref::<rustls::Error>().is_some() {
            return Failure::TlsError;
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::TimedOut {
                return Failure::Timeout;
            }
        }
        cause = e.source();
    }
    Failure::ConnectionRefused
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hooks(allow_local: bool) -> HttpWebhooks {
        HttpWebhooks::new(Duration::from_secs(1), allow_local).unwrap()
    }

    fn post(url: &str) -> WebhookPost {
        WebhookPost {
            url: url.to_owned(),
            headers: vec![],
            body: b"{}".to_vec(),
        }
    }

    #[tokio::test]
    async fn a_callback_on_a_private_address_or_over_http_is_never_called() {
        for url in [
            "http://hooks.example.com/in",
            "https://127.0.0.1/in",
            "https://10.1.2.3/in",
            "https://169.254.169.254/latest/meta-data",
            "https://[::1]/in",
            "https://localhost/in",
            "not a url",
        ] {
            let reply = hooks(false).post(&post(url)).await;
            assert_eq!(
                reply.answer,
                Answer::Failed(Failure::ConnectionRefused),
                "{url}"
            );
        }
    }

    #[tokio::test]
    async fn a_redirect_is_an_answer_not_followed_and_a_silent_receiver_times_out() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            // First: a redirect to elsewhere. Second: read, never answer.
            let (mut first, _) = listener.accept().await.unwrap();
            let mut buf = vec![0; 4096];
            let _ = first.read(&mut buf).await;
            let answer = "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://127.0.0.1:1/x\r\ncontent-length: 0\r\n\r\n";
            first.write_all(answer.as_bytes()).await.unwrap();
            let (mut second, _) = listener.accept().await.unwrap();
            let _ = second.read(&mut buf).await;
            tokio::time::sleep(Duration::from_secs(5)).await;
        });
        let url = format!("http://127.0.0.1:{port}/in");
        let reply = hooks(true).post(&post(&url)).await;
        assert_eq!(reply.answer, Answer::Status(307));
        let reply = hooks(true).post(&post(&url)).await;
        assert_eq!(reply.answer, Answer::Failed(Failure::Timeout));
        let closed = hooks(true).post(&post("http://127.0.0.1:1/in")).await;
        assert_eq!(closed.answer, Answer::Failed(Failure::ConnectionRefused));
    }
}
