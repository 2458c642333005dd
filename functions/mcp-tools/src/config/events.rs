//! MCP Events (the extension): where the events are read for `events/poll`, and where webhook
//! subscriptions are kept. mcp-tools only: the Gateway's target serves no events.

use entry::config::{ConfigError, Env};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventsConfig {
    /// `EVENTS_TABLE`: each owner's event log (written by the completion paths).
    pub events_table: String,
    /// `SUBSCRIPTIONS_TABLE`: webhook subscriptions; None: poll only (webhook not offered).
    pub subscriptions_table: Option<String>,
    /// `EVENTS_ALLOW_LOCAL_CALLBACKS=true` (local development only): a callback may be http
    /// and on this machine or a private network, and a caller with no identity (AUTH_MODE
    /// none) may subscribe.
    pub allow_local_callbacks: bool,
}

impl EventsConfig {
    /// None when `EVENTS_TABLE` is unset: the extension is not offered.
    pub fn from_env<F: Fn(&str) -> Option<String>>(
        env: &Env<F>,
    ) -> Result<Option<Self>, ConfigError> {
        let subscriptions_table = env.optional("SUBSCRIPTIONS_TABLE");
        let allow_local_callbacks = env.flag(
            "EVENTS_ALLOW_LOCAL_CALLBACKS",
            "true or false (true: local development only)",
        )?;
        let Some(events_table) = env.optional("EVENTS_TABLE") else {
            return match subscriptions_table {
                Some(_) => Err(ConfigError::Missing {
                    name: "EVENTS_TABLE",
                    expected: "the events table, which SUBSCRIPTIONS_TABLE needs (webhooks \
                               replay from it)",
                }),
                None => Ok(None),
            };
        };
        Ok(Some(Self {
            events_table,
            subscriptions_table,
            allow_local_callbacks,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use entry::config::test_env as env;

    #[test]
    fn events_are_offered_with_their_table_and_webhooks_with_theirs() {
        assert_eq!(EventsConfig::from_env(&env(&[])).unwrap(), None);
        let poll = EventsConfig::from_env(&env(&[("EVENTS_TABLE", "e")]))
            .unwrap()
            .unwrap();
        assert_eq!(
            (poll.subscriptions_table, poll.allow_local_callbacks),
            (None, false)
        );
        let both = EventsConfig::from_env(&env(&[
            ("EVENTS_TABLE", "e"),
            ("SUBSCRIPTIONS_TABLE", "s"),
            ("EVENTS_ALLOW_LOCAL_CALLBACKS", "true"),
        ]))
        .unwrap()
        .unwrap();
        assert_eq!(both.subscriptions_table.as_deref(), Some("s"));
        assert!(both.allow_local_callbacks);
        let err = EventsConfig::from_env(&env(&[("SUBSCRIPTIONS_TABLE", "s")])).unwrap_err();
        assert!(err.to_string().contains("EVENTS_TABLE"), "{err}");
        let err =
            EventsConfig::from_env(&env(&[("EVENTS_ALLOW_LOCAL_CALLBACKS", "maybe")])).unwrap_err();
        assert!(
            err.to_string().contains("EVENTS_ALLOW_LOCAL_CALLBACKS"),
            "{err}"
        );
    }
}
