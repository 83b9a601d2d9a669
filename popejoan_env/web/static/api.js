/*
 * api.js — the API page (api.html, served at "/docs"): every endpoint of /api/openapi.json with its request
 * body, parameters and answers, then every schema. Built with textContent only: nothing in the schema is
 * read as HTML.
 *
 * Test hooks: api (data-loaded="true" once drawn), api-description, api-endpoints (one endpoint-<METHOD>-<path>
 * each, data-method, data-path), api-schemas (one schema-<Name> each).
 */

function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function schemaName(schema) {
  if (!schema) return "";
  if (schema.$ref) return schema.$ref.split("/").pop();
  if (schema.type === "array" && schema.items) return `array of ${schemaName(schema.items)}`;
  return schema.type || "";
}

function pretty(value) {
  return element("pre", JSON.stringify(value, null, 2), "api-json");
}

function endpoint(path, method, operation) {
  const box = element("section", null, "api-endpoint");
  box.dataset.testid = `endpoint-${method.toUpperCase()}-${path}`;
  box.dataset.method = method.toUpperCase();
  box.dataset.path = path;
  const title = element("h3");
  title.append(element("span", method.toUpperCase(), "api-method"), element("code", ` ${path}`));
  box.append(title, element("p", operation.summary || ""));
  for (const parameter of operation.parameters || []) {
    const where = parameter.in === "path" ? "path" : "query";
    const text = `${where} ${parameter.name}: ${schemaName(parameter.schema)}`;
    box.append(element("p", parameter.description ? `${text} — ${parameter.description}` : text, "api-param"));
  }
  const body = operation.requestBody;
  if (body) {
    for (const [kind, content] of Object.entries(body.content || {})) {
      box.append(element("p", `body (${kind})${body.required ? "" : ", optional"}:`, "api-param"));
      if (content.example !== undefined) box.append(pretty(content.example));
      else box.append(pretty(content.schema));
    }
  }
  const answers = element("ul", null, "api-answers");
  for (const [status, answer] of Object.entries(operation.responses || {})) {
    const json = (answer.content || {})["application/json"];
    const shape = json ? schemaName(json.schema) : "";
    answers.append(element("li", `${status} ${shape ? shape + " — " : ""}${answer.description || ""}`));
  }
  box.append(answers);
  return box;
}

async function draw() {
  const root = document.getElementById("api");
  const response = await fetch("/api/openapi.json");
  const spec = await response.json();
  if (!response.ok) {
    document.getElementById("api-description").textContent = spec.error || `HTTP ${response.status}`;
    return;
  }
  document.getElementById("api-description").textContent = `${spec.info.title} ${spec.info.version}. ${
    spec.info.description}`;
  const endpoints = document.getElementById("api-endpoints");
  for (const [path, operations] of Object.entries(spec.paths)) {
    for (const [method, operation] of Object.entries(operations)) endpoints.append(endpoint(path, method, operation));
  }
  const schemas = document.getElementById("api-schemas");
  for (const [name, schema] of Object.entries((spec.components || {}).schemas || {})) {
    const box = element("section", null, "api-schema");
    box.dataset.testid = `schema-${name}`;
    box.id = name;
    box.append(element("h3", name), element("p", schema.description || ""), pretty(schema));
    schemas.append(box);
  }
  root.dataset.loaded = "true";
}

draw();
