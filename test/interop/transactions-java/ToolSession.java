import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

/**
 * Runs Kafka's own command-line tools (their public main classes: TransactionsCommand,
 * TransactionalMessageCopier, ConsoleConsumer) one after another in this one JVM, so a test can
 * run a dozen tool invocations for the cost of one JVM start. Each stdin line is a main class and
 * its arguments, tab-separated; the tool's stdout is framed on our stdout as
 * "=== BEGIN", its output, "=== END <exit code> <error>". Exit.exit() (what the tools call to
 * end or fail) is turned into a return with that code instead of ending the JVM.
 */
public class ToolSession {
    private static volatile int firstExit = -1;

    private static final class Exited extends Error {
        final int code;

        Exited(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    /** Kafka's Exit (org.apache.kafka.common.utils up to 3.x, ...utils.internals from 4.0): exit calls throw Exited. */
    private static void trapExit() throws Exception {
        Class<?> exit;
        try {
            exit = Class.forName("org.apache.kafka.common.utils.internals.Exit");
        } catch (ClassNotFoundException e) {
            exit = Class.forName("org.apache.kafka.common.utils.Exit");
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object trap = Proxy.newProxyInstance(procedure.getClassLoader(), new Class<?>[] {procedure}, (proxy, method, a) -> {
            if (method.getDeclaringClass() == Object.class) return method.invoke(procedure, a);
            // The first exit is the tool's own: one that catches Throwable around it exits again, with 1.
            if (firstExit < 0) firstExit = (Integer) a[0];
            throw new Exited((Integer) a[0]);
        });
        exit.getMethod("setExitProcedure", procedure).invoke(null, trap);
    }

    public static void main(String[] args) throws Exception {
        trapExit();
        PrintStream out = System.out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        out.println("=== READY");
        out.flush();
        String line;
        while ((line = in.readLine()) != null) {
            String[] parts = line.split("\t");
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            int code = 0;
            String error = "";
            firstExit = -1;
            System.setOut(new PrintStream(captured, true, StandardCharsets.UTF_8));
            try {
                Class.forName(parts[0]).getMethod("main", String[].class).invoke(null, (Object) Arrays.copyOfRange(parts, 1, parts.length));
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (cause instanceof Exited) {
                    code = ((Exited) cause).code;
                } else {
                    code = 1;
                    error = String.valueOf(cause).replace('\n', ' ');
                }
            } catch (Exited e) {
                code = e.code;
            } finally {
                System.out.flush();
                System.setOut(out);
            }
            if (firstExit >= 0) code = firstExit;
            out.println("=== BEGIN");
            out.print(captured.toString(StandardCharsets.UTF_8));
            out.println();
            out.println("=== END " + code + " " + error);
            out.flush();
        }
    }
}
