// The harness's entry point for the Java kernel: run `code/bin/iobench ...` and show its output.
//
// In a Java page:   %load ../../code/java/tools/IoBench.java
//                   IoBench.run("list");
//                   IoBench.run("battery", "nginx");
// The harness itself is Python (code/iobench); this class only starts it, streams its
// output into the notebook line by line, and fails the cell when the harness fails.
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

public final class IoBench {
    private IoBench() {}

    /** The repository root: the nearest folder upwards that holds _config.yml and code/bin/iobench. */
    public static Path root() {
        Path dir = Path.of("").toAbsolutePath();
        for (Path p = dir; p != null; p = p.getParent()) {
            if (Files.exists(p.resolve("_config.yml")) && Files.isExecutable(p.resolve("code/bin/iobench"))) {
                return p;
            }
        }
        throw new IllegalStateException("no repository root above " + dir);
    }

    /** Run the harness with these arguments; print its output; return its exit status (0, or 77 for a skip). */
    public static int run(String... args) throws IOException, InterruptedException {
        Path root = root();
        List<String> command = new ArrayList<>();
        command.add(root.resolve("code/bin/iobench").toString());
        command.addAll(List.of(args));
        Process p = new ProcessBuilder(command).directory(root.toFile()).redirectErrorStream(true).start();
        try (BufferedReader out = new BufferedReader(new InputStreamReader(p.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line; (line = out.readLine()) != null; ) {
                System.out.println(line);
            }
        } finally {
            if (p.isAlive()) {
                p.destroy();  // the harness stops its servers on SIGTERM
            }
        }
        int status = p.waitFor();
        if (status != 0 && status != 77) {
            throw new IllegalStateException("iobench " + String.join(" ", args) + " exited " + status);
        }
        return status;
    }
}
