"""Logfire as the OTel SDK, exporting to a plain OTLP endpoint (send_to_logfire=False, OTEL_EXPORTER_OTLP_ENDPOINT).

Mode `pydantic-ai`: logfire.instrument_pydantic_ai() on the Pydantic AI travel agent.
Mode `openai`: logfire.instrument_openai() on the OpenAI client, with logfire spans around a hand-written
tool loop and each tool.
"""

import harness


class _LogfireShutdown:
    def shutdown(self):
        import logfire

        logfire.shutdown()


def run(mode: str):
    import logfire

    logfire.configure(send_to_logfire=False, console=False, service_name="capture-logfire", metrics=False)
    harness.keep_for_shutdown(_LogfireShutdown())
    if mode == "pydantic-ai":
        from fw_pydantic_ai import build_agent

        logfire.instrument_pydantic_ai()
        return build_agent().run_sync(harness.QUESTION).output

    from openai import OpenAI

    client = OpenAI(base_url=harness.BASE_URL, api_key=harness.API_KEY)
    logfire.instrument_openai(client)
    tools = {"get_weather": harness.weather, "get_time": harness.local_time}

    def run_tool(name, arguments, call_id):
        with logfire.span("execute_tool {tool_name}", tool_name=name, tool_call_id=call_id, arguments=arguments):
            return tools[name](**arguments)

    with logfire.span("invoke_agent {agent_name}", agent_name="travel_assistant"):
        return harness.tool_loop(client, run_tool)


if __name__ == "__main__":
    harness.main(run)
