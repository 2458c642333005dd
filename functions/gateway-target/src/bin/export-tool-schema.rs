//! Writes the AgentCore Gateway target's inline tool schema from the tools' own schemas:
//! `infra/gateway-tool-schema.json` (for the AgentCore API) and the `InlinePayload` block of
//! `infra/template.yaml`. Run from the workspace root: `make tool-schema`.
//!
//! `--catalog FILE --template-out PATH`: the same block for a deployment with a tool catalog
//! (its tools in place of submit_job and trigger_training), written into a copy of the template
//! at PATH; the checked-in files are left as they are. `make build-sam` builds from that copy.
//! `--catalog FILE --json-out PATH`: the payload alone, for the CDK construct's `toolSchemaFile`.

use std::process::ExitCode;

use gateway_target::schema::{
    inline_payload, render_json, with_template_block, JSON_PATH, TEMPLATE_PATH,
};
use mcp_tools::catalog::Catalog;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let done = match &args[..] {
        [] => export(),
        [c, catalog, t, out] if c == "--catalog" && t == "--template-out" => {
            export_for_catalog(catalog, out, true)
        }
        [c, catalog, j, out] if c == "--catalog" && j == "--json-out" => {
            export_for_catalog(catalog, out, false)
        }
        _ => Err(
            "usage: export-tool-schema [--catalog FILE (--template-out PATH | --json-out PATH)]"
                .into(),
        ),
    };
    match done {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn template() -> Result<String, Box<dyn std::error::Error>> {
    Ok(std::fs::read_to_string(TEMPLATE_PATH)
        .map_err(|e| format!("reading {TEMPLATE_PATH} (run from the workspace root): {e}"))?)
}

fn export() -> Result<(), Box<dyn std::error::Error>> {
    let payload = inline_payload(&mcp_tools::tool_definitions())?;
    std::fs::write(JSON_PATH, render_json(&payload))
        .map_err(|e| format!("writing {JSON_PATH} (run from the workspace root): {e}"))?;
    std::fs::write(TEMPLATE_PATH, with_template_block(&template()?, &payload)?)
        .map_err(|e| format!("writing {TEMPLATE_PATH}: {e}"))?;
    println!("wrote {JSON_PATH} and the tool schema in {TEMPLATE_PATH}");
    Ok(())
}

fn export_for_catalog(
    catalog: &str,
    out: &str,
    as_template: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    let catalog = Catalog::load(catalog)?;
    let payload = inline_payload(&mcp_tools::catalog_tool_definitions(&catalog))?;
    let text = if as_template {
        with_template_block(&template()?, &payload)?
    } else {
        render_json(&payload)
    };
    std::fs::write(out, text).map_err(|e| format!("writing {out}: {e}"))?;
    println!("wrote {out}: the catalog's tools in the Gateway's tool schema");
    Ok(())
}
