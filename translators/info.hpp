#pragma once
// The info-route encoders of every dialect, over one model catalogue
// (translators/canonical/catalogue.hpp): what the proxy includes to answer /v1/models,
// Ollama's /api/tags, /api/ps, /api/version and /api/show, TGI's /info, llama.cpp's /props and
// SGLang's /get_model_info and /get_server_info without knowing any dialect's shape.

#include "translators/anthropic/info.hpp"
#include "translators/canonical/catalogue.hpp"
#include "translators/llamacpp/info.hpp"
#include "translators/ollama/info.hpp"
#include "translators/openai/info.hpp"
#include "translators/sglang/info.hpp"
#include "translators/tgi/info.hpp"
