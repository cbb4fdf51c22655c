export { TidelogInstrumentation, VERSION } from './instrumentation.js'
export type { TidelogInstrumentationConfig } from './instrumentation.js'
export { ATTR as SEMCONV_ATTRIBUTES } from './attributes.js'
