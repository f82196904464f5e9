/* jit.c — the host's target machine, the O3 pipeline, and ORC LLJIT.
 *
 * One LLJIT serves the process.  A program is optimized for the host CPU
 * (its name and features: without a target machine nothing vectorizes),
 * emitted as an object in memory, and added under a resource tracker of
 * its own, which jit_unload removes: the JIT's memory stays flat over
 * many compiles.  libm's functions (exp, log, tanh, pow) resolve from the
 * process.
 */
#include "codegen/internal.h"

#include <stdio.h>
#include <unistd.h>

#include <llvm-c/Analysis.h>
#include <llvm-c/Error.h>
#include <llvm-c/ErrorHandling.h>
#include <llvm-c/LLJIT.h>
#include <llvm-c/Orc.h>
#include <llvm-c/Target.h>
#include <llvm-c/Transforms/PassBuilder.h>

struct JitCode {
  LLVMOrcResourceTrackerRef tracker;
  EntryFn entry;
};

static GMutex jit_lock;
static LLVMOrcLLJITRef jit;

/* Takes 'err': its message as the reason, prefixed by 'what'. */
static void take_error(LLVMErrorRef err, const char *what, Diag *why) {
  char *msg = LLVMGetErrorMessage(err);
  diag_reason(why, "%s: %s", what, msg);
  LLVMDisposeErrorMessage(msg);
}

static gsize native_ready;

/* LLVM's fatal errors (an internal failure: the IR is verified first)
 * end the process: with a message naming LLVM, not an abort. */
static void fatal_error(const char *reason) {
  fprintf(stderr, "partir: LLVM failed: %s\n", reason);
  fflush(stderr);
  _exit(70); /* EX_SOFTWARE */
}

static gboolean native_init(Diag *why) {
  if (g_once_init_enter(&native_ready)) {
    LLVMInstallFatalErrorHandler(fatal_error);
    gsize ok = LLVMInitializeNativeTarget() == 0 &&
                       LLVMInitializeNativeAsmPrinter() == 0
                   ? 1
                   : 2;
    g_once_init_leave(&native_ready, ok);
  }
  if (native_ready != 1)
    diag_reason(why, "LLVM has no code generator for this host");
  return native_ready == 1;
}

static gsize nvptx_ready;

LLVMTargetMachineRef jit_nvptx_machine(const char *arch, Diag *why) {
  if (!native_init(why)) /* the fatal error handler */
    return NULL;
  if (g_once_init_enter(&nvptx_ready)) {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
    g_once_init_leave(&nvptx_ready, 1);
  }
  const char *triple = "nvptx64-nvidia-cuda";
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    diag_reason(why, "this LLVM has no NVPTX code generator: %s", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return LLVMCreateTargetMachine(target, triple, arch, "",
                                 LLVMCodeGenLevelAggressive, LLVMRelocDefault,
                                 LLVMCodeModelDefault);
}

LLVMTargetMachineRef jit_host_machine(Diag *why) {
  if (!native_init(why))
    return NULL;
  char *triple = LLVMGetDefaultTargetTriple();
  LLVMTargetRef target = NULL;
  char *msg = NULL;
  if (LLVMGetTargetFromTriple(triple, &target, &msg)) {
    diag_reason(why, "no LLVM target for %s: %s", triple, msg);
    LLVMDisposeMessage(msg);
    LLVMDisposeMessage(triple);
    return NULL;
  }
  char *cpu = LLVMGetHostCPUName(), *features = LLVMGetHostCPUFeatures();
  LLVMTargetMachineRef tm = LLVMCreateTargetMachine(
      target, triple, cpu, features, LLVMCodeGenLevelAggressive,
      LLVMRelocDefault, LLVMCodeModelJITDefault);
  LLVMDisposeMessage(cpu);
  LLVMDisposeMessage(features);
  LLVMDisposeMessage(triple);
  if (!tm)
    diag_reason(why, "LLVM made no target machine for this host");
  return tm;
}

/* Whether the comma-separated 'features' turn on 'name' ("+name"). */
static gboolean has_feature(const char *features, const char *name) {
  gsize n = strlen(name);
  for (const char *p = features; p && *p;) {
    const char *end = strchr(p, ',');
    gsize len = end ? (gsize)(end - p) : strlen(p);
    if (len == n + 1 && p[0] == '+' && memcmp(p + 1, name, n) == 0)
      return TRUE;
    p = end ? end + 1 : NULL;
  }
  return FALSE;
}

int jit_host_vector_bits(void) {
  static gsize bits;
  if (g_once_init_enter(&bits)) {
    char *features = LLVMGetHostCPUFeatures();
    gsize b = has_feature(features, "avx512f") ? 512
              : has_feature(features, "avx")   ? 256
                                               : 128;
    LLVMDisposeMessage(features);
    g_once_init_leave(&bits, b);
  }
  return (int)bits;
}

gboolean jit_optimize(LLVMModuleRef mod, LLVMTargetMachineRef tm, Diag *why) {
  char *triple = LLVMGetTargetMachineTriple(tm);
  LLVMSetTarget(mod, triple);
  LLVMDisposeMessage(triple);
  LLVMTargetDataRef layout = LLVMCreateTargetDataLayout(tm);
  LLVMSetModuleDataLayout(mod, layout);
  LLVMDisposeTargetData(layout);
  /* 512-bit vectors where the CPU has them (the default prefers 256;
   * the machine is the host's, jit_host_machine) */
  if (jit_host_vector_bits() == 512)
    for (LLVMValueRef f = LLVMGetFirstFunction(mod); f;
         f = LLVMGetNextFunction(f))
      if (!LLVMIsDeclaration(f))
        LLVMAddAttributeAtIndex(
            f, LLVMAttributeFunctionIndex,
            LLVMCreateStringAttribute(LLVMGetModuleContext(mod),
                                      "prefer-vector-width", 19, "512", 3));
  char *msg = NULL;
  if (LLVMVerifyModule(mod, LLVMReturnStatusAction, &msg)) {
    diag_reason(why, "internal: the generated IR is invalid: %s", msg);
    LLVMDisposeMessage(msg);
    return FALSE;
  }
  LLVMDisposeMessage(msg);
  LLVMPassBuilderOptionsRef opts = LLVMCreatePassBuilderOptions();
  LLVMErrorRef err = LLVMRunPasses(mod, "default<O3>", tm, opts);
  LLVMDisposePassBuilderOptions(opts);
  if (err) {
    take_error(err, "LLVM's optimizer", why);
    return FALSE;
  }
  return TRUE;
}

/* An LLVM diagnostic: an error goes to the Diag (the compile then fails
 * with it); warnings and remarks are dropped, nothing is printed. */
static void on_diagnostic(LLVMDiagnosticInfoRef info, void *data) {
  if (LLVMGetDiagInfoSeverity(info) != LLVMDSError)
    return;
  char *desc = LLVMGetDiagInfoDescription(info);
  diag_append_reason(data, "LLVM: %s", desc);
  LLVMDisposeMessage(desc);
}

void jit_catch_diagnostics(LLVMContextRef ctx, Diag *why) {
  LLVMContextSetDiagnosticHandler(ctx, on_diagnostic, why);
}

/* The process's LLJIT, made at the first load (under jit_lock). */
static gboolean jit_ready(Diag *why) {
  if (jit)
    return TRUE;
  LLVMErrorRef err = LLVMOrcCreateLLJIT(&jit, NULL);
  if (err) {
    jit = NULL;
    take_error(err, "LLVM's JIT", why);
    return FALSE;
  }
  LLVMOrcDefinitionGeneratorRef gen = NULL;
  err = LLVMOrcCreateDynamicLibrarySearchGeneratorForProcess(
      &gen, LLVMOrcLLJITGetGlobalPrefix(jit), NULL, NULL);
  if (err) {
    take_error(err, "LLVM's JIT: the process's symbols", why);
    return FALSE;
  }
  LLVMOrcJITDylibAddGenerator(LLVMOrcLLJITGetMainJITDylib(jit), gen);
  return TRUE;
}

LLVMMemoryBufferRef jit_emit(LLVMModuleRef mod, LLVMTargetMachineRef tm,
                             LLVMCodeGenFileType kind, Diag *why) {
  char *msg = NULL;
  LLVMMemoryBufferRef out = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, kind, &msg, &out)) {
    diag_reason(why, "LLVM could not emit the %s: %s",
                kind == LLVMObjectFile ? "object" : "assembly", msg);
    LLVMDisposeMessage(msg);
    return NULL;
  }
  return out;
}

JitCode *jit_load(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *entry,
                  Diag *why) {
  LLVMMemoryBufferRef obj = jit_emit(mod, tm, LLVMObjectFile, why);
  if (!obj)
    return NULL;
  g_mutex_lock(&jit_lock);
  JitCode *code = NULL;
  if (jit_ready(why)) {
    LLVMOrcJITDylibRef main = LLVMOrcLLJITGetMainJITDylib(jit);
    LLVMOrcResourceTrackerRef rt = LLVMOrcJITDylibCreateResourceTracker(main);
    LLVMErrorRef err = LLVMOrcLLJITAddObjectFileWithRT(jit, rt, obj);
    obj = NULL; /* the JIT owns it now */
    LLVMOrcExecutorAddress addr = 0;
    if (!err)
      err = LLVMOrcLLJITLookup(jit, &addr, entry);
    if (err) {
      take_error(err, "LLVM's JIT", why);
      LLVMErrorRef gone = LLVMOrcResourceTrackerRemove(rt);
      if (gone)
        LLVMConsumeError(gone);
      LLVMOrcReleaseResourceTracker(rt);
    } else {
      code = g_new0(JitCode, 1);
      code->tracker = rt;
      code->entry = (EntryFn)(uintptr_t)addr;
    }
  }
  g_mutex_unlock(&jit_lock);
  if (obj)
    LLVMDisposeMemoryBuffer(obj);
  return code;
}

EntryFn jit_entry(JitCode *code) { return code->entry; }

void jit_unload(JitCode *code) {
  if (!code)
    return;
  g_mutex_lock(&jit_lock);
  LLVMErrorRef err = LLVMOrcResourceTrackerRemove(code->tracker);
  if (err)
    LLVMConsumeError(err); /* the memory stays mapped: nothing to undo */
  LLVMOrcReleaseResourceTracker(code->tracker);
  g_mutex_unlock(&jit_lock);
  g_free(code);
}
