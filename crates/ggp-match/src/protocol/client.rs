//! The referee's side of the transport: one message, one HTTP/1.0 exchange.
//!
//! Requests are made as ggp-base's GameServer makes them: `POST /` with the message as the
//! body, `Content-Type: text/acl`, `Accept: text/delim`, `Sender: GAMESERVER` and the
//! `Receiver` header, a 5 s connect timeout and a read timeout per message. The reply is the
//! body, trimmed.

use std::time::Duration;

/// Why a message got no reply.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SendError {
    /// No reply within the timeout (`TO` in a match record).
    #[error("no reply in time")]
    Timeout,
    /// The connection failed (`CE` in a match record).
    #[error("connection failed: {0}")]
    Connection(String),
}

/// A blocking HTTP client for talking to players.
#[derive(Clone)]
pub struct Client {
    http: reqwest::blocking::Client,
}

impl Client {
    /// A client with ggp-base's 5 s connect timeout and no proxy.
    ///
    /// # Errors
    /// The HTTP machinery cannot be set up.
    pub fn new() -> Result<Client, SendError> {
        let http = reqwest::blocking::Client::builder()
            .connect_timeout(Duration::from_secs(5))
            .no_proxy()
            .build()
            .map_err(|e| SendError::Connection(e.to_string()))?;
        Ok(Client { http })
    }

    /// Sends `message` to the player at `address` (`host:port`) and returns its reply,
    /// trimmed; `receiver` fills the `Receiver` header.
    ///
    /// # Errors
    /// [`SendError::Timeout`] when no full reply arrives within `timeout`, else
    /// [`SendError::Connection`].
    pub fn send(
        &self,
        address: &str,
        receiver: &str,
        message: &str,
        timeout: Duration,
    ) -> Result<String, SendError> {
        let classify = |e: reqwest::Error| {
            if e.is_timeout() {
                SendError::Timeout
            } else {
                SendError::Connection(e.to_string())
            }
        };
        let response = self
            .http
            .post(format!("http://{address}/"))
            .version(reqwest::Version::HTTP_10)
            .header("Accept", "text/delim")
            .header("Sender", "GAMESERVER")
            .header("Receiver", receiver)
            .header("Content-Type", "text/acl")
            .body(message.to_string())
            .timeout(timeout)
            .send()
            .map_err(classify)?;
        let text = response.text().map_err(classify)?;
        Ok(text.trim().to_string())
    }
}
