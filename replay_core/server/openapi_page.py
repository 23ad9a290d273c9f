"""The OpenAPI document as one readable HTML page (`/api/v1/docs`): plain HTML rendered from the
document (server/openapi.py), nothing fetched from anywhere when it is read."""

from __future__ import annotations

import html


def page(doc: dict) -> str:
    """The document as one self-contained HTML page: every operation, its parameters, body and answers."""
    e = html.escape
    out = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{e(doc['info']['title'])}</title>",
        "<style>body{font:15px/1.45 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}"
        "code,pre{font:13px ui-monospace,monospace;background:#f4f4f4}pre{padding:.6rem;overflow:auto}"
        "h3{margin:1.6rem 0 .2rem}.m{display:inline-block;min-width:3.5rem;font-weight:700}"
        "table{border-collapse:collapse}td,th{border:1px solid #ddd;padding:.2rem .5rem;text-align:left;vertical-align:top}"
        "</style></head><body>",
        f"<h1>{e(doc['info']['title'])}</h1><p>{e(doc['info']['description'])}</p>",
        '<p>Machine-readable: <a href="openapi.json">openapi.json</a> (OpenAPI 3.1).</p><h2>Operations</h2><ul>',
    ]
    ops = [(path, method, item) for path, methods in doc["paths"].items() for method, item in methods.items()]
    for path, method, item in ops:
        out.append(
            f'<li><a href="#{e(item["operationId"])}"><span class=m>{method.upper()}</span><code>{e(path)}</code></a>'
            f" — {e(item['summary'])}</li>"
        )
    out.append("</ul>")
    for path, method, item in ops:
        out.append(
            f'<h3 id="{e(item["operationId"])}"><span class=m>{method.upper()}</span><code>{e(path)}</code></h3>'
            f"<p>{e(item['summary'])}</p>"
        )
        roles = item["security"][0]["bearer"] if item["security"] else None
        out.append(f"<p><b>Access:</b> {'bearer token, role ' + e(' or '.join(roles)) if roles else 'open'}</p>")
        if item.get("parameters"):
            out.append("<table><tr><th>parameter</th><th>in</th><th>type</th><th>about</th></tr>")
            for p in item["parameters"]:
                out.append(
                    f"<tr><td><code>{e(p['name'])}</code>{' (required)' if p['required'] else ''}</td><td>{e(p['in'])}</td>"
                    f"<td><code>{e(_type_of(p['schema']))}</code></td><td>{e(p.get('description', ''))}</td></tr>"
                )
            out.append("</table>")
        if item.get("requestBody"):
            kinds = ", ".join(
                f"<code>{e(k)}</code> {e(_type_of(v['schema']))}" for k, v in item["requestBody"]["content"].items()
            )
            out.append(f"<p><b>Body</b>{' (required)' if item['requestBody'].get('required') else ''}: {kinds}</p>")
        codes = ", ".join(f"<code>{e(c)}</code> {e(r['description'])}" for c, r in item["responses"].items())
        out.append(f"<p><b>Answers:</b> {codes}</p>")
    out.append("<h2>Schemas</h2>")
    for name, schema in doc["components"]["schemas"].items():
        out.append(f'<h3 id="schema-{e(name)}">{e(name)}</h3><p>{e(schema.get("description", ""))}</p>')
        props = schema.get("properties") or {}
        if props:
            required = set(schema.get("required", []))
            out.append("<table><tr><th>field</th><th>type</th><th>about</th></tr>")
            for field_name, sub in props.items():
                out.append(
                    f"<tr><td><code>{e(field_name)}</code>{' (required)' if field_name in required else ''}</td>"
                    f"<td><code>{e(_type_of(sub))}</code></td><td>{e(sub.get('description', ''))}</td></tr>"
                )
            out.append("</table>")
    out.append("</body></html>")
    return "".join(out)


def _type_of(schema: dict) -> str:
    """A short reading of a schema: `string ≤ 200`, `StepEvent[]`, `integer | null`."""
    if "$ref" in schema:
        return schema["$ref"].rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(_type_of(s) for s in schema[key])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"{_type_of(schema.get('items', {}))}[]"
    if "enum" in schema:
        return " | ".join(repr(v) for v in schema["enum"])
    if "const" in schema:
        return repr(schema["const"])
    bound = f" ≤ {schema['maxLength']}" if "maxLength" in schema else ""
    return f"{kind}{bound}"
