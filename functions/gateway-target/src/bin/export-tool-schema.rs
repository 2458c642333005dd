//! Writes the AgentCore Gateway target's inline tool schema from the tools' own schemas:
//! `infra/gateway-tool-schema.json` (for the AgentCore API) and the `InlinePayload` block of
//! `infra/template.yaml`. Run from the workspace root: `make tool-schema`.

use std::process::ExitCode;

use gateway_target::schema::{
    inline_payload, render_json, with_template_block, JSON_PATH, TEMPLATE_PATH,
};

fn main() -> ExitCode {
    match export() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn export() -> Result<(), Box<dyn std::error::Error>> {
    let payload = inline_payload(&mcp_tools::tool_definitions())?;
    std::fs::write(JSON_PATH, render_json(&payload))
        .map_err(|e| format!("writing {JSON_PATH} (run from the workspace root): {e}"))?;
    let template = std::fs::read_to_string(TEMPLATE_PATH)
        .map_err(|e| format!("reading {TEMPLATE_PATH}: {e}"))?;
    std::fs::write(TEMPLATE_PATH, with_template_block(&template, &payload)?)
        .map_err(|e| format!("writing {TEMPLATE_PATH}: {e}"))?;
    println!("wrote {JSON_PATH} and the tool schema in {TEMPLATE_PATH}");
    Ok(())
}
