import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;

import org.apache.kafka.common.utils.Exit;

/**
 * Runs Kafka's own command-line tools (their public main classes: TransactionsCommand,
 * TransactionalMessageCopier, ConsoleConsumer) one after another in this one JVM, so a test can
 * run a dozen tool invocations for the cost of one JVM start. Each stdin line is a main class and
 * its arguments, tab-separated; the tool's stdout is framed on our stdout as
 * "=== BEGIN", its output, "=== END <exit code> <error>". Exit.exit() (what the tools call to
 * end or fail) is turned into a return with that code instead of ending the JVM.
 */
public class ToolSession {
    private static final class Exited extends Error {
        final int code;

        Exited(int code) {
            super("exit " + code, null, false, false);
            this.code = code;
        }
    }

    public static void main(String[] args) throws Exception {
        Exit.setExitProcedure((code, message) -> {
            throw new Exited(code);
        });
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
            out.println("=== BEGIN");
            out.print(captured.toString(StandardCharsets.UTF_8));
            out.println();
            out.println("=== END " + code + " " + error);
            out.flush();
        }
    }
}
