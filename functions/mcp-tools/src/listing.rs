//! The list results and their caching hints (MCP 2026-07-28, SEP-2549): the tools, the
//! resource templates and the (empty) resource list change only with a deployment and are the
//! same for every caller, so a client or a shared cache may keep them a while.

use rmcp::model::{
    CacheScope, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, ProtocolVersion,
    Tool,
};

use crate::contract::resources;

/// How long a listing may be kept: a deployment that changes the tools is seen within it.
pub const LIST_TTL_MS: u64 = 5 * 60 * 1000;
pub const LIST_CACHE_SCOPE: CacheScope = CacheScope::Public;

/// Whether a client of `version` is told caching hints: they are 2026-07-28's.
pub(crate) fn caches(version: Option<ProtocolVersion>) -> bool {
    version.is_some_and(|v| v >= ProtocolVersion::V_2026_07_28)
}

/// Puts the hints on a list result, for a client that reads them.
macro_rules! hinted {
    ($list:expr, $version:expr) => {
        match caches($version) {
            true => $list
                .with_ttl_ms(LIST_TTL_MS)
                .with_cache_scope(LIST_CACHE_SCOPE),
            false => $list,
        }
    };
}

pub(crate) fn tools(tools: Vec<Tool>, version: Option<ProtocolVersion>) -> ListToolsResult {
    hinted!(ListToolsResult::with_all_items(tools), version)
}

/// Jobs are not enumerable: an empty list.
pub(crate) fn resources(version: Option<ProtocolVersion>) -> ListResourcesResult {
    hinted!(ListResourcesResult::with_all_items(Vec::new()), version)
}

pub(crate) fn templates(version: Option<ProtocolVersion>) -> ListResourceTemplatesResult {
    let templates = ListResourceTemplatesResult::with_all_items(resources::templates());
    hinted!(templates, version)
}
